/* Implements: the facts about LoRA adapters (docs/finetuning.md, "LoRA") that the
   compiler's -lm-lora pass and the runtime (--init, the merge of `lmrt weights
   merge-lora`) share: the adapters' parameter names, their scale, PEFT's
   initialisation of A, and the merged weight. Plain C++, header only. */
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

namespace lmrt::lora {

/* The adapters of target `base` ("layer.0.attn.wq"): A [in, rank] and B [rank, out],
   beside the weight in the plan's parameter paths (PEFT's lora_A / lora_B). */
inline std::string aName(const std::string &base) { return base + ".lora_A"; }
inline std::string bName(const std::string &base) { return base + ".lora_B"; }

/* x @ W + scale (x @ A) @ B, scale = alpha / rank (PEFT without rslora). */
inline double scale(double alpha, int64_t rank) { return alpha / (double)rank; }

/* PEFT initialises lora_A ([rank, in] there) with kaiming_uniform_(a = sqrt(5)):
   U(-b, b) with b = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + 5)), fan_in = in,
   which is b = 1 / sqrt(in). B starts at zero, so the adapted model starts as the base. */
inline double aBound(int64_t in) { return 1.0 / std::sqrt((double)in); }

/* W [in, out] += scale * A [in, rank] @ B [rank, out], row-major, accumulated in
   double per element (the merged weight PEFT's merge_and_unload writes, transposed to
   LMC's [in, out] layout). */
template <typename T>
void mergeInto(T *w, const T *a, const T *b, int64_t in, int64_t out, int64_t rank, double s) {
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < rank; ++k) acc += (double)a[i * rank + k] * (double)b[k * out + j];
      w[i * out + j] = (T)((double)w[i * out + j] + s * acc);
    }
}

}  // namespace lmrt::lora
