/* Implements: `lmrt run --dump-dir D`, the record the PyTorch parity test
   replays: D/init.safetensors (initial parameters under their plan names) and,
   for step k = 1..N, D/step<k>.safetensors holding
     tokens         i32[B, T + 1]   the batch (causal; other transforms: each
                                    input under its own name: ids, labels, ...)
     loss           scalar          the train_step loss (plan precision)
     lr             f64 scalar      the learning rate of the update
     grad.<param>   raw gradients, before clipping
     param.<param>  values after the AdamW update
     sample<j>.logits, sample<j>.ids
                    the operand and the draws of the j-th lm.sample step of
                    train_step (j = 0, 1, ...; CPU backend): the one value
                    a reference cannot recompute from the rest. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace lmrt {

class Session;

/* True for the names of the files a dump writes: init.safetensors, step<k>.safetensors. */
bool isParityDumpFile(const std::string &name);

class ParityDump {
public:
  explicit ParityDump(const std::string &dir);  // creates the directory
  void writeInit(Session &session);
  /* Copies the raw gradients now, before clipping changes them; fp16 plans'
     divided by their loss scale (a power of two: exact), so a dump holds the true
     gradients whatever the precision. */
  void captureGradients(Session &session, double lossScale = 1);
  /* From now on, keeps the logits and draws of every lm.sample step of train_step
     (writeStep writes and forgets them). */
  void captureSamples(Session &session);
  void writeStep(int64_t step, Session &session,
                 const std::vector<std::pair<std::string, TensorRef>> &inputs, const TensorRef &loss,
                 double lr);

private:
  std::string dir_;
  std::vector<std::vector<char>> grads_;
  struct Captured {
    TensorType type;
    std::vector<char> bytes;
  };
  std::vector<std::pair<Captured, Captured>> samples_;  // (logits, ids) per sample step
};

}  // namespace lmrt
