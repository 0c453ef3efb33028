/* Implements: writeFileAtomic (see atomic_file.h). */
#include "runtime/lmrt/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "runtime/lmrt/tensor.h"

namespace lmrt {

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
