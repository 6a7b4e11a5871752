#pragma once
// The exponential moving average of a model's weights (DeePMD-kit's training.enable_ema and ema_decay):
// a_0 = w_0, and after every training step a <- d a + (1 - d) w for every parameter tensor (a frozen one
// stays equal to its weights). The statistics and the energy bias are buffers, not weights: the averaged
// model takes the model's own. Every rank holds the same weights, hence the same average.
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "src/model/DeepPot.hpp"

namespace deepkf {

class WeightAverage {
 public:
  // Starts at the model's current weights.
  WeightAverage(const DeepPot& model, double decay);

  // a <- d a + (1 - d) w, in place.
  void update(const DeepPot& model);
  double decay() const { return decay_; }

  // The averaged tensors under "weight_average" ("w0", "w1", ... and the decay they were made with).
  void save(torch::serialize::OutputArchive& archive) const;
  // false when the archive has no average (a checkpoint of a run without it); ModelError naming `path` when
  // its tensors do not fit the model.
  bool load(torch::serialize::InputArchive& archive, const std::string& path);

  // Runs f with the model's weights replaced by the average, then puts the weights back (also when f throws).
  void with_average(const DeepPot& model, const std::function<void()>& f) const;

 private:
  double decay_;
  std::vector<torch::Tensor> average_;
};

}  // namespace deepkf
