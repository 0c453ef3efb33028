/* Implements: the CUDA backend (runtime/exec/backend.h), a plan's programs on one
   GPU. Device memory, all allocated when the backend is made:
     arena      one allocation of the plan's largest arena_bytes; every ARENA
                buffer lives at its plan offset (the programs never run at once)
     parameters one allocation holding every parameter, each at a 256-byte
                aligned offset; the gradients, AdamW's m and v in three more
                allocations of the same layout, so the gradient norm, accumulation
                and AdamW are single launches over flat storage
     inputs     one buffer per program input, filled from the host before a run
     constants  the plan's CONSTANT buffers, uploaded once
     scratch    the most any step needs besides its outputs (attention's
                recomputed forward, reductions' partial sums)
   plus cuBLASLt's 32 MiB workspace, and later, on first use, the accumulation
   buffer (--accumulate) and the decode caches (sampling). Every step is enqueued
   on one stream in plan order; the host waits only where it reads a result back
   (an output, the gradient norm, a download), which is where a fault inside a
   kernel surfaces: LMRT_CUDA_SYNC=1 waits after every step so that the step named
   in an error is the one that failed. The diagnostics (--profile, NaN
   attribution, the parity dump's observer) wait after every step too. */
#pragma once
#include <memory>

#include "runtime/exec/backend.h"

namespace lmrt {
class Session;
struct BackendProvider;
namespace cuda {

std::unique_ptr<Backend> createBackend(Session &session, const DeviceOptions &options);
/* The "cuda" provider (probe, create, list devices) that plugin.cpp exports. */
const BackendProvider &provider();

}  // namespace cuda
}  // namespace lmrt
