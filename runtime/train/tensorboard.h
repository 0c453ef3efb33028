/* Implements: `lmrt run --tensorboard DIR`: TensorBoard event files, in the
   format TensorBoard reads (and TensorFlow's summary writers write):

     DIR/events.out.tfevents.<unix seconds>.<host>.<pid>.lmrt
       a sequence of TFRecords, each
         u64 length, u32 masked CRC32C of the length bytes,
         `length` bytes of a serialized tensorboard.Event,
         u32 masked CRC32C of those bytes
       (masked CRC: ((c >> 15) | (c << 17)) + 0xa282ead8, little-endian)
       first Event: file_version "brain.Event:2"; then one Event per training
       step with a Summary of scalar values: train/loss, train/lr,
       train/grad_norm, train/tokens_per_s, train/gflops_per_s, and
       val/loss on the steps that evaluated.

   Each record is flushed as written, so a TensorBoard watching DIR shows a
   running job. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace lmrt {

struct StepMetrics;

/* CRC32C (Castagnoli) of `n` bytes, and TFRecord's masked form of it. */
uint32_t crc32c(const void *data, size_t n);
uint32_t maskedCrc32c(const void *data, size_t n);

class TensorBoardWriter {
public:
  /* Creates DIR (and its parents) if needed and a new event file in it; "" =
     disabled. Throws naming the path if it cannot. */
  explicit TensorBoardWriter(const std::string &dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter &) = delete;
  TensorBoardWriter &operator=(const TensorBoardWriter &) = delete;

  bool enabled() const { return f_ != nullptr; }
  const std::string &path() const { return path_; }
  /* One Event at `step` holding every (tag, value). */
  void scalars(int64_t step, const std::vector<std::pair<std::string, double>> &values);
  /* The step's metrics as the tags above; gflops <= 0 leaves train/gflops_per_s out. */
  void write(const StepMetrics &m, double gflopsPerS);

private:
  void record(const std::string &bytes);
  std::string path_;
  FILE *f_ = nullptr;
};

}  // namespace lmrt
