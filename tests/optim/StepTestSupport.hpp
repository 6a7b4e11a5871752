#pragma once
// What the training-step tests build their steps on: the model an input's model section describes.
#include "src/model/DeepPot.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf::test {

// The input's model, validated, with its initial weights (the seeds it gives).
inline DeepPot model_of(const TrainConfig& cfg) {
  auto mc = ModelConfig::from_json(cfg.model);
  mc.validate();
  return DeepPot(mc);
}

}  // namespace deepkf::test
