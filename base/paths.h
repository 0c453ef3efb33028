/* Implements: the output rules every tool applies to the paths a user names,
   before it does any work (docs/runtime.md, "Paths"; one place, so that lmc and
   every lmrt command behave alike):
   - an output that is the same file as an input, or as another output, is refused
     naming both (`--out` = the plan would destroy the plan), and so is an output
     whose temporary (PATH.tmp, file_io.h) is an input;
   - an existing file is not clobbered: what a command may replace without
     `--overwrite` is its own earlier output (a plan for `lmc -o`, weights for
     `lmrt run --out`), recognised by its contents, and nothing else;
   - every output is checked writable up front, so an unwritable `--out` is found
     before step 1, not after hours of training;
   - a temporary left by a killed write (PATH.tmp) is removed.
   "The same file" means the same (device, inode) when both exist, so symlinks,
   hard links and `./x` are seen through, and the same directory and name
   otherwise (two new outputs at one path). Outputs are then written with
   writeFileAtomic (file_io.h). */
#pragma once
#include <cstdio>
#include <functional>
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

/* What a command does with a file already at one of its output paths (an empty
   regular file, which holds nothing to lose, is always replaced). */
enum class IfExists {
  /* Replaced only with --overwrite. */
  NeedsOverwrite,
  /* Replaced when OutputSpec::isEarlier recognises it as an earlier output of the
     same kind (a plan over a plan); anything else needs --overwrite. */
  ReplaceEarlier,
  /* Replaced whatever it holds: a file named by the command in a directory of
     its own (lmc --dump-dir's "00-frontend.mlir", a view of the latest compile). */
  Replace,
  /* The command has a rule of its own, applied where it opens the file (lmrt run's
     --metrics, which --resume continues); checked here for everything else. */
  OwnRule,
};

/* One output of a command. A file in a directory output that does not exist yet
   (the command creates it) is checked through that directory. */
struct OutputSpec {
  std::string role;  // the flag, as the user wrote it: "--out", "-o", "--dump-dir"
  std::string path;
  /* A directory the command writes into: its files are outputs of their own, or,
     when they are too many to list (lmrt run --dump-dir's step<N>.safetensors),
     `names` says which file names the command writes there, and an input with
     such a name in the directory is refused. */
  bool directory = false;
  IfExists ifExists = IfExists::NeedsOverwrite;
  /* For ReplaceEarlier: true when the existing file at `path` holds an earlier
     output of this kind; `kind` names it in the refusal ("a plan"). */
  std::function<bool(const std::string &path)> isEarlier;
  std::string kind;
  std::function<bool(const std::string &name)> names;
};

/* The rules above, for every output of a command against all of its inputs, in
   this order: overlaps (outputs, their temporaries, inputs), then each output:
   a stale temporary removed (said on `log`; not when null), writable (an
   existing directory, a missing parent, a parent that is not a directory or that
   refuses a new file are errors naming the flag), and not clobbered unless
   `overwrite`. Throws lmrt::Error naming the flag and the path. */
void checkOutputs(const std::vector<OutputSpec> &outputs, const std::vector<NamedPath> &inputs, bool overwrite,
                  FILE *log);

/* True when `path` starts with `magic` (the first bytes of a file format). */
bool fileStartsWith(const std::string &path, const std::string &magic);

/* Removes PATH.tmp (what writeFileAtomic leaves when killed mid-write) if it is a
   regular file, and says so on `log`. */
void removeStaleTemp(const std::string &path, FILE *log);

}  // namespace lmrt
