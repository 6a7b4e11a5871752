#pragma once
// What the trainer's tests build their runs from: an input document as a config, and options for a quiet run
// in a folder of its own; for the input's own tests, a minimal input and the error an input gives.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/model/ModelFile.hpp"
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

// The weights of the model file at `path`, float64 in parameter order (as Trainer::flat_parameters gives
// the trainer's).
inline std::vector<double> model_file_weights(const std::string& path) {
  std::vector<double> out;
  for (const auto& t : load_model(path, torch::kCPU).model->parameters()) {
    const auto c = t.detach().to(torch::kFloat64).contiguous();
    out.insert(out.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  }
  return out;
}

// The smallest complete input: two elements, two system paths in batches of 2, 10 steps.
inline nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "model": {"type_map": ["O", "H"]},
    "training": {"training_data": {"systems": ["a", "b"], "batch_size": 2}, "numb_steps": 10}
  })");
}

// The message of the ConfigError that `doc` read as in.json in /tmp raises, or "no error".
inline std::string error_of(const nlohmann::json& doc) {
  try {
    TrainConfig::from_json(doc, "in.json", "/tmp");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// The smallest run record a checkpoint of `model` at `step` holds (its model section, the step, the
// optimizer's name), for the checkpoint file's own tests.
inline nlohmann::json checkpoint_meta(const DeepPot& model, std::int64_t step) {
  return {{"model", model->config().to_json()}, {"step", step}, {"optimizer", "LKF"}};
}

// A small se_e2_a model on silicon (si_mlearn's systems, absolute paths) trained for `steps` steps with
// `optimizer`: "Adam", or "LKF" with a fixed p0 and small blocks, which pins the trajectories.
inline nlohmann::json silicon_input(const std::vector<std::string>& train, const std::vector<std::string>& valid,
                 const std::string& optimizer, std::int64_t steps) {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "model": {
      "type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [8, 16],
                     "axis_neuron": 4, "type_one_side": true, "seed": 3},
      "fitting_net": {"neuron": [32, 32], "resnet_dt": true, "seed": 3}
    },
    "training": {"training_data": {"batch_size": 1}, "validation_data": {"batch_size": 4, "numb_btch": 100},
                 "seed": 5, "disp_freq": 1000000, "save_freq": 1000000, "num_threads": 2}
  })");
  doc["training"]["training_data"]["systems"] = train;
  doc["training"]["validation_data"]["systems"] = valid;
  doc["training"]["numb_steps"] = steps;
  if (optimizer == "Adam") {
    doc["optimizer"] = {{"type", "Adam"},
                        {"learning_rate", {{"start_lr", 1e-3}, {"stop_lr", 1e-4}, {"decay_steps", 20}}}};
  } else {
    // A fixed p0 (100) pins these runs' trajectories; the automatic p0 has its own tests.
    doc["optimizer"] = {
        {"type", "LKF"}, {"kf_blocksize", 512}, {"nselect", 12}, {"groupsize", 6}, {"p0", 100.0}};
  }
  return doc;
}

}  // namespace deepkf::test
