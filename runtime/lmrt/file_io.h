/* Implements: whole-file reads and atomic writes for every file the runtime owns
   (plans, safetensors, shards, text inputs), with errors that name the file. */
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace lmrt {

/* The whole of a regular file. `what` names the kind of file in errors
   ("cannot open plan 'x.plan': No such file or directory"). Throws lmrt::Error. */
std::string readWholeFile(const std::string &path, const char *what);

/* Writes through a temporary and a rename, so a reader never sees a half-written
   file and a failed write (disk full, a throwing producer) leaves whatever was at
   the path untouched.
   Streams the contents through `emit` into PATH.tmp, then renames it to PATH.
   `what` names the kind of file in errors ("cannot write plan 'x.plan': ...").
   Throws lmrt::Error; an exception from `emit` removes the temporary and propagates. */
void writeFileAtomic(const std::string &path, const char *what,
                     const std::function<void(std::ostream &)> &emit);

}  // namespace lmrt
