/* Implements: the CPU backend (backend.h): every program step runs on the host,
   through the CPU kernel table (kernels/registry.h) or the plan's generated CPU
   kernels (kernel_library.h), over the session's host parameter copies, one
   64-byte aligned arena shared by all programs, the plan's constants and the
   decode caches. AdamW (adamw.h) and the gradient norm (grad_clip.h) run over the
   same host memory, so uploads and downloads are no-ops. Registered under "cpu"
   when the program starts, together with the kernel checks plan validation uses. */
#pragma once
#include <memory>

#include "runtime/exec/backend.h"

namespace lmrt {
class Session;
namespace cpu {

std::unique_ptr<Backend> createBackend(Session &session, const DeviceOptions &options);

}  // namespace cpu
}  // namespace lmrt
