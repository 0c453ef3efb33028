/* Implements: whole-file reads and safe writes for every file the runtime owns
   (plans, safetensors, shards, checkpoints, text inputs), with errors that name the
   file. The rules for outputs (docs/runtime.md, "Paths"):
   - a regular file (or a new path) is written to PATH.tmp, fsynced, renamed over
     PATH, and the directory fsynced: a crash at any instant leaves either the old
     or the new file, never half of one;
   - a symlink to a regular file is written the same way next to its target, so
     the link stays a link;
   - anything else that exists (a device such as /dev/null, a FIFO, a socket) is
     written straight into, as a compiler does: renaming over it would replace a
     device node with a regular file. */
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace lmrt {

/* The whole of a regular file. `what` names the kind of file in errors
   ("cannot open plan 'x.plan': No such file or directory"). Anything but a
   regular file (a FIFO would block forever) is refused. Throws lmrt::Error. */
std::string readWholeFile(const std::string &path, const char *what);

/* Writes `path` by the rules above, streaming the contents through `emit`.
   `what` names the kind of file in errors ("cannot write plan 'x.plan': ...").
   Throws lmrt::Error; an exception from `emit` removes the temporary and
   propagates, leaving whatever was at the path untouched. */
void writeFileAtomic(const std::string &path, const char *what,
                     const std::function<void(std::ostream &)> &emit);

/* The temporary writeFileAtomic uses for `path` (PATH.tmp, next to a symlink's
   target), so a stale one left by a killed process can be found and removed. */
std::string atomicTempPath(const std::string &path);

/* fsync of a file or a directory (directories: makes renames in it durable). */
void fsyncPath(const std::string &path, const char *what);

/* "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/". */
std::string parentDirectory(const std::string &path);

}  // namespace lmrt
