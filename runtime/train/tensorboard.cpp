/* Implements: TensorBoard event files (see tensorboard.h). */
#include "runtime/train/tensorboard.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tensor.h"
#include "runtime/train/metrics.h"
#include "runtime/train/tensorboard.pb.h"

namespace lmrt {

// --- CRC32C -------------------------------------------------------------------
// TFRecord frames records with CRC32C (the Castagnoli polynomial, reflected
// 0x82F63B78), which no Debian library offers on its own in bookworm; this is
// the textbook table-driven form, checked against RFC 3720's test vectors in
// test/Unit/train/TensorBoardTest.cpp.

namespace {

struct Crc32cTable {
  uint32_t t[256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[i] = c;
    }
  }
};

}  // namespace

uint32_t crc32c(const void *data, size_t n) {
  static const Crc32cTable table;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table.t[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t maskedCrc32c(const void *data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// --- the writer -----------------------------------------------------------------

namespace {

double wallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void makeDirs(const std::string &dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    std::string part = dir.substr(0, at);
    struct stat st;
    if (::stat(part.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        fail("--tensorboard '%s': '%s' exists and is not a directory", dir.c_str(), part.c_str());
      continue;
    }
    if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST)
      fail("--tensorboard: cannot create directory '%s': %s", part.c_str(), std::strerror(errno));
  }
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string &dir) {
  if (dir.empty()) return;
  makeDirs(dir);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  char name[512];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%d.lmrt",
                (long long)wallTime(), host, (int)::getpid());
  path_ = (dir.back() == '/' ? dir : dir + "/") + name;
  // O_EXCL: a new run never appends to (or clobbers) another run's file.
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail("--tensorboard: cannot create '%s': %s", path_.c_str(), std::strerror(errno));
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    ::close(fd);
    fail("--tensorboard: cannot open '%s'", path_.c_str());
  }
  tensorboard::Event e;
  e.set_wall_time(wallTime());
  e.set_file_version("brain.Event:2");
  record(e.SerializeAsString());
}

TensorBoardWriter::~TensorBoardWriter() {
  if (f_) std::fclose(f_);
}

void TensorBoardWriter::record(const std::string &bytes) {
  uint64_t len = bytes.size();
  uint32_t lenCrc = maskedCrc32c(&len, 8), dataCrc = maskedCrc32c(bytes.data(), bytes.size());
  bool ok = std::fwrite(&len, 8, 1, f_) == 1 && std::fwrite(&lenCrc, 4, 1, f_) == 1 &&
            std::fwrite(bytes.data(), 1, bytes.size(), f_) == bytes.size() &&
            std::fwrite(&dataCrc, 4, 1, f_) == 1 && std::fflush(f_) == 0;
  if (!ok) fail("--tensorboard: cannot write '%s': %s", path_.c_str(), std::strerror(errno));
}

void TensorBoardWriter::scalars(int64_t step, const std::vector<std::pair<std::string, double>> &values) {
  if (!f_) return;
  tensorboard::Event e;
  e.set_wall_time(wallTime());
  e.set_step(step);
  tensorboard::Summary *s = e.mutable_summary();
  for (const auto &[tag, v] : values) {
    tensorboard::Summary::Value *sv = s->add_value();
    sv->set_tag(tag);
    sv->set_simple_value((float)v);
  }
  record(e.SerializeAsString());
}

void TensorBoardWriter::write(const StepMetrics &m, double gflopsPerS) {
  std::vector<std::pair<std::string, double>> v = {{"train/loss", m.loss},
                                                   {"train/lr", m.lr},
                                                   {"train/grad_norm", m.gradNorm},
                                                   {"train/tokens_per_s", m.tokensPerS}};
  if (gflopsPerS > 0) v.push_back({"train/gflops_per_s", gflopsPerS});
  if (m.hasValLoss) v.push_back({"val/loss", m.valLoss});
  for (const auto &[name, value] : m.valMetrics) v.push_back({"val/" + name, value});
  scalars(m.step, v);
}

}  // namespace lmrt
