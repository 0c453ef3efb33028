/* Implements: readWholeFile and writeFileAtomic (see file_io.h). */
#include "runtime/lmrt/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#include "runtime/lmrt/tensor.h"

namespace lmrt {

std::string readWholeFile(const std::string &path, const char *what) {
  auto error = [&](const std::string &verb, const std::string &why) {
    return Error("cannot " + verb + " " + what + " '" + path + "': " + why);
  };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw error("open", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw error("open", "not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw error("open", std::strerror(errno));
  std::string bytes((size_t)st.st_size, '\0');
  if (!f.read(bytes.data(), (std::streamsize)bytes.size())) throw error("read", "short read");
  return bytes;
}

void writeFileAtomic(const std::string &path, const char *what,
                     const std::function<void(std::ostream &)> &emit) {
  std::string tmp = path + ".tmp";
  auto error = [&](const std::string &why) {
    return Error(std::string("cannot write ") + what + " '" + path + "': " + why);
  };
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw error(std::strerror(errno));
    try {
      emit(f);
    } catch (...) {
      f.close();
      std::remove(tmp.c_str());
      throw;
    }
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw error("write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw error(why);
  }
}

}  // namespace lmrt
