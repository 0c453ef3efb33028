/* Implements: the metrics of `lmrt metrics` computed from counts: pass@k of
   generated programs, and perplexity and bits per byte of a language model
   (the same formulas `lmrt eval` prints, from its summed loss). */
#pragma once
#include <cstdint>

namespace lmrt::metrics {

/* The unbiased pass@k estimator of Chen et al. 2021 ("Evaluating Large
   Language Models Trained on Code", §2.1) for one problem with n samples of
   which c pass: 1 − C(n−c, k) / C(n, k), the chance that k samples drawn
   without replacement include a passing one. Computed as their numerically
   stable product 1 − Π_{i=n−c+1}^{n} (1 − k/i), since the binomials overflow
   a double for n in the hundreds. 1 when n − c < k (every draw of k holds a
   pass). Throws lmrt::Error unless 0 <= c <= n and 1 <= k <= n: with fewer
   than k samples pass@k is not estimated, not 1. */
double passAtK(int64_t n, int64_t c, int64_t k);

/* exp(nll / tokens): nll is the summed negative log-likelihood in nats over
   `tokens` predicted tokens. */
double perplexity(double nllNats, double tokens);

/* nll / ln 2 / bytes: bits per byte of text, comparable across tokenizers
   (`bytes` is the UTF-8 length of the text the tokens encode). */
double bitsPerByte(double nllNats, double bytes);

}  // namespace lmrt::metrics
