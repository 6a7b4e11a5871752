#pragma once
// Adam's settings (docs/input.md, "optimizer"): DeePMD-kit's exponential learning-rate schedule and its
// "ener" loss prefactors, where an input file may give each, and the resolved form. The only place these keys
// are read.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "optim/OptimizerInput.hpp"

namespace deepkf {

struct AdamSettings {
  double start_lr = 1e-3;
  double stop_lr = 3.51e-8;
  std::int64_t decay_steps = 5000;
  double start_pref_e = 0.02, limit_pref_e = 1.0;
  double start_pref_f = 1000.0, limit_pref_f = 1.0;
  double start_pref_v = 0.0, limit_pref_v = 0.0;
  // DeePMD-kit's optimizer.adam_beta1, adam_beta2 (the moments' decay) and weight_decay (an L2 penalty added
  // to the gradient).
  double beta1 = 0.9, beta2 = 0.999, weight_decay = 0.0;

  // Every key read, with the sections it may be in: DeePMD-kit's learning_rate and loss sections, or the
  // "optimizer" section (the schedule then under optimizer.learning_rate).
  static const std::vector<OptionKey>& keys();
  static AdamSettings read(const OptimizerInput& in);
  // The "optimizer" section of a resolved input, every setting given ("type": "Adam").
  nlohmann::json to_json() const;
};

}  // namespace deepkf
