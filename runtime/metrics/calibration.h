/* Implements: calibration metrics for `lmrt metrics --task calibration`:
   the negative log-likelihood and the expected calibration error of softmax
   probabilities at a temperature, and temperature scaling (Guo et al. 2017,
   "On Calibration of Modern Neural Networks"): the one scalar T > 0 that
   minimises the NLL of softmax(logits / T) on a validation set, then applied
   to the test set. Dividing by T keeps every argmax, so accuracy is unchanged
   and only the confidences move. */
#pragma once
#include <cstdint>
#include <vector>

namespace lmrt::metrics {

/* One example: its logits (any number of classes >= 2) and its label. */
struct Scored {
  std::vector<double> logits;
  int64_t label = 0;
};

/* Mean over examples of −log softmax(logits / T)[label], in nats. */
double negativeLogLikelihood(const std::vector<Scored> &examples, double temperature = 1.0);

/* Expected calibration error with `bins` equal-width bins over the confidence
   (the largest softmax probability): bin m holds the confidences in
   (m/bins, (m+1)/bins]; ECE = Σ_m |B_m|/n · |accuracy(B_m) − mean confidence(B_m)|,
   empty bins contributing 0 (Guo et al.'s definition, 15 bins in their tables). */
double expectedCalibrationError(const std::vector<Scored> &examples, double temperature = 1.0, int bins = 15);

/* The temperature in [kMinTemperature, kMaxTemperature] that minimises
   negativeLogLikelihood on `validation`. The NLL is convex in β = 1/T, so
   golden-section search over log T finds the one minimum; a few Newton steps
   on β (whose first and second derivatives are the mean of E_p[z] − z_label
   and of Var_p[z]) then pin it to rounding, where comparing function values
   alone stalls at about sqrt(machine epsilon). */
double fitTemperature(const std::vector<Scored> &validation);
constexpr double kMinTemperature = 1e-2, kMaxTemperature = 1e2;

}  // namespace lmrt::metrics
