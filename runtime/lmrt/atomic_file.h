/* Implements: writing a file through a temporary and a rename, so a reader never
   sees a half-written plan, checkpoint or shard, and a failed write (disk full, a
   throwing producer) leaves whatever was at the path untouched. */
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace lmrt {

/* Streams the contents through `emit` into PATH.tmp, then renames it to PATH.
   `what` names the kind of file in errors ("cannot write plan 'x.plan': ...").
   Throws lmrt::Error; an exception from `emit` removes the temporary and propagates. */
void writeFileAtomic(const std::string &path, const char *what,
                     const std::function<void(std::ostream &)> &emit);

}  // namespace lmrt
