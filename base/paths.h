/* Implements: the checks every tool runs on the paths a user names before it does
   any work (docs/runtime.md, "Paths"):
   - an output that is the same file as an input, or as another output, is refused
     naming both (`--out` = the plan would destroy the plan);
   - every output is checked writable up front, so an unwritable `--out` is found
     before step 1, not after hours of training;
   - a temporary left by a killed write (PATH.tmp) is removed.
   "The same file" means the same (device, inode) when both exist, and the same
   directory and name otherwise (two new outputs at one path). */
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace lmrt {

struct NamedPath {
  std::string role;  // how the user named it: "--out", "--metrics", "the plan", "lmc -o"
  std::string path;
};

/* True if `a` and `b` name the same file (see above). */
bool samePath(const std::string &a, const std::string &b);

/* Throws Error "--out 'x.plan' is the plan 'x.plan': refusing to overwrite an input"
   if an output equals an input, or "--metrics 'a' and --out 'a' are the same file"
   if two outputs coincide. Empty paths, and outputs that are devices or FIFOs (which
   are written into, not replaced: /dev/null may take every output), are skipped. */
void refuseOverlappingPaths(const std::vector<NamedPath> &outputs, const std::vector<NamedPath> &inputs);

/* Throws unless `out.path` can be written as a file: an existing directory, a
   missing parent directory or one that refuses a new file is an error naming the
   flag and the path. Devices and FIFOs need only be writable. Creates and removes a
   probe file next to the target to be sure (permissions, read-only file systems). */
void checkOutputFile(const NamedPath &out);

/* Throws unless `out.path` is a directory that can be written, or can be created
   (its parent is writable); creates nothing. */
void checkOutputDirectory(const NamedPath &out);

/* Removes PATH.tmp (what writeFileAtomic leaves when killed mid-write) if it is a
   regular file, and says so on `log`. */
void removeStaleTemp(const std::string &path, FILE *log);

}  // namespace lmrt
