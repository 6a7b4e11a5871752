#pragma once
// The Adam baseline: torch::optim::Adam with DeePMD-kit's exponentially decaying learning rate
//   lr(t) = lr_0 * r^floor(t / s),  r = (lr_stop / lr_0)^(s / T)
// (s = decay_steps, T = total_steps) and the "ener" loss's prefactor schedule (EnerLoss.hpp).
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/EnerLoss.hpp"

namespace torch::optim {
class Adam;
}

namespace deepkf {

struct AdamOptions {
  double start_lr = 1e-3;              // lr_0
  double stop_lr = 3.51e-8;            // lr at t = T
  std::int64_t decay_steps = 5000;     // s
  std::int64_t total_steps = 1000000;  // T (numb_steps)
  double beta1 = 0.9;                  // decay of the first moment
  double beta2 = 0.999;                // decay of the second moment
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2 penalty: lambda w added to the gradient before the moments
};

// Prefactors of the three loss terms at one step.
struct LossPrefactors {
  double energy = 0.0;
  double force = 0.0;
  double virial = 0.0;
};

class AdamTrainer {
 public:
  // ConfigError for non-positive learning rates, decay_steps or total_steps.
  AdamTrainer(std::vector<torch::Tensor> params, const AdamOptions& options);
  ~AdamTrainer();

  // lr(t) = lr_0 * r^floor(t / s)
  double learning_rate(std::int64_t step) const;
  // p(t) = p_limit + (p_start - p_limit) lr(t) / lr_0 for energy, force and virial.
  LossPrefactors prefactors(std::int64_t step, double start_e, double limit_e, double start_f, double limit_f,
                            double start_v, double limit_v) const;
  void zero_grad();
  // One Adam step at training step t on the parameters' .grad(), with lr(t).
  void step(std::int64_t step);
  const AdamOptions& options() const { return options_; }

  std::string name() const { return "Adam"; }
  // "lr <lr(t)>" at the last step taken.
  std::string status() const;
  std::int64_t state_bytes() const;
  // torch::optim::Adam's state under "adam", with the last step.
  void save(torch::serialize::OutputArchive& archive);
  void load(torch::serialize::InputArchive& archive);

 private:
  std::vector<torch::Tensor> params_;
  AdamOptions options_;
  double decay_rate_ = 1.0;
  std::int64_t last_step_ = 0;
  std::unique_ptr<torch::optim::Adam> adam_;
};

}  // namespace deepkf
