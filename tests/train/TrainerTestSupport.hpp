#pragma once
// What the trainer's tests build their runs from: an input document as a config, and options for a quiet run
// in a folder of its own.
#include <nlohmann/json.hpp>
#include <string>

#include "src/train/TrainConfig.hpp"
#include "src/train/Trainer.hpp"

namespace deepkf::test {

// The input document as `deepkf train` would read it from test-input.json in "/".
inline TrainConfig config_of(const nlohmann::json& doc) {
  return TrainConfig::from_json(doc, "test-input.json", "/");
}

// Output in `dir`, no progress bar; the model file only when asked for (checkpoints are always written).
inline TrainerOptions options_in(const std::string& dir, bool write_model = false) {
  TrainerOptions o;
  o.output_dir = dir;
  o.progress = 0;
  o.write_model = write_model;
  return o;
}

}  // namespace deepkf::test
