/* Implements: a per-test scratch directory under $TMPDIR, removed afterwards. */
#pragma once
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace lmrt_test {

struct TempDir {
  std::string path;
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/lmrt_train_test.XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string &name) const { return path + "/" + name; }
};

inline void writeFile(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary) << data;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace lmrt_test
