//===- DumpDir.h - Files of lmc's --dump-dir --------------------*- C++ -*-===//
//
// One helper that writes a file of `lmc compile --dump-dir DIR`, for every
// stage of lmc that leaves something to look at (IR, plan text, and emitted
// kernel sources), so they all name, create and report files the same way.
// See docs/compilation.md for the file names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace lmc {

/// Writes `text` to `dir/name`, creating the folders `name` has (e.g.
/// "05-kernels/k0.cpp"). On an I/O error writes "cannot write 'PATH': why"
/// to `errors` and fails.
inline mlir::LogicalResult writeDumpFile(llvm::StringRef dir, llvm::StringRef name, llvm::StringRef text,
                                         llvm::raw_ostream &errors) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  if (std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path))) {
    errors << "cannot create '" << llvm::sys::path::parent_path(path) << "': " << ec.message();
    return mlir::failure();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (!ec) {
    os << text;
    os.close();
    ec = os.error();
  }
  if (ec) {
    os.clear_error();
    errors << "cannot write '" << path << "': " << ec.message();
    return mlir::failure();
  }
  return mlir::success();
}

} // namespace lmc
