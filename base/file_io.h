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

/* No bound on a file's size (readWholeFile's default). */
constexpr uint64_t kNoSizeBound = ~uint64_t(0);

/* The whole of a regular file into `bytes`, or false with `error` set to
   "cannot open plan 'x.plan': No such file or directory" (`what` names the kind
   of file). The one reader of files a user names, so that every tool reads them
   by the same rules (docs/runtime.md, "Paths"):
   - only a regular file is read: a FIFO would block forever and /dev/zero never
     ends; it is opened without blocking and checked on the open descriptor;
   - it is read until end of file, not for as many bytes as stat says: a file
     of /proc or /sys says 0 and holds more;
   - more than `maxBytes` is refused, naming the bound.
   Throws nothing (the compiler's libraries are built without exceptions). */
bool readRegularFile(const std::string &path, const char *what, uint64_t maxBytes, std::string &bytes,
                     std::string &error);

/* The same, for a file that is not read here (a pass plugin dlopen maps): true
   when `path` is a regular file of at most `maxBytes`, else false and `error`. */
bool checkRegularFile(const std::string &path, const char *what, uint64_t maxBytes, std::string &error);

/* readRegularFile, throwing lmrt::Error. */
std::string readWholeFile(const std::string &path, const char *what, uint64_t maxBytes = kNoSizeBound);

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
