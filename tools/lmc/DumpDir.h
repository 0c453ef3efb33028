//===- DumpDir.h - Files of lmc's --dump-dir --------------------*- C++ -*-===//
//
// One helper that writes a file of `lmc compile --dump-dir DIR`, for every
// stage of lmc that leaves something to look at (IR, plan text, and emitted
// kernel sources), so they all name, create and report files the same way.
// See docs/compilation.md for the file names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "base/file_io.h"
#include "base/tensor.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace lmc {

/// Writes `text` to `dir/name`, creating the folders `name` has (e.g.
/// "05-kernels/k0.cpp"), atomically as every output (base/file_io.h): a
/// killed lmc leaves the previous dump's file, never half of one. On an I/O
/// error writes "cannot write 'PATH': why" to `errors` and fails.
inline mlir::LogicalResult writeDumpFile(llvm::StringRef dir, llvm::StringRef name, llvm::StringRef text,
                                         llvm::raw_ostream &errors) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  if (std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path))) {
    errors << "cannot create '" << llvm::sys::path::parent_path(path) << "': " << ec.message();
    return mlir::failure();
  }
  try {
    lmrt::writeFileAtomic(path.str().str(), "--dump-dir file",
                          [&](std::ostream &os) { os.write(text.data(), static_cast<std::streamsize>(text.size())); });
  } catch (const lmrt::Error &e) {
    errors << e.what();
    return mlir::failure();
  }
  return mlir::success();
}

} // namespace lmc
