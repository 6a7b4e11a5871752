#pragma once
// What the training-step tests build their steps on: the model an input's model section describes, and a
// small silicon model on the project's CP2K cells.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optim/TrainingStep.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/TrainConfig.hpp"
#include "tests/support/Catch.hpp"

namespace deepkf::test {

// The input's model, validated, with its initial weights (the seeds it gives).
inline DeepPot model_of(const TrainConfig& cfg) {
  auto mc = ModelConfig::from_json(cfg.model);
  mc.validate();
  return DeepPot(mc);
}

// The tensors' values, flattened and concatenated in float64.
inline torch::Tensor flat_values(const std::vector<torch::Tensor>& parts) {
  std::vector<torch::Tensor> f;
  for (const auto& p : parts) f.push_back(p.detach().to(torch::kFloat64).flatten());
  return torch::cat(f);
}

// |a - b| / |b| (2-norms).
inline double relative_distance(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

// A small se_e2_a model of silicon in `precision`, trained by `optimizer` (the "optimizer" section).
inline TrainConfig silicon_step_config(const nlohmann::json& optimizer,
                                       const std::string& precision = "float64") {
  auto doc = nlohmann::json::parse(R"({
    "model": {"type_map": ["Si"], "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40],
              "neuron": [4, 8], "axis_neuron": 2, "seed": 2}, "fitting_net": {"neuron": [8, 8], "seed": 2}},
    "training": {"training_data": {"systems": ["unused"]}, "numb_steps": 10}})");
  doc["model"]["descriptor"]["precision"] = precision;
  doc["model"]["fitting_net"]["precision"] = precision;
  doc["optimizer"] = optimizer;
  return TrainConfig::from_json(doc, "step-input.json", "/");
}

// The shipped CP2K system of `natoms`-atom silicon cells (periodic, with forces and virials).
inline System silicon_cells(std::int64_t natoms) {
  for (auto& s : read_systems(std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"))
    if (s.natoms == natoms) return std::move(s);
  FAIL("no " << natoms << "-atom system in data/si_cp2k.h5");
  return {};
}

// RLEKF keys that take every kind of measurement on the silicon cells, quickly: blocks of 64, p0 10, a
// force noise, the virial, two force groups of 4 atoms; `more` adds or replaces keys.
inline nlohmann::json every_measurement(const nlohmann::json& more) {
  nlohmann::json o = {{"type", "RLEKF"},     {"kf_blocksize", 64},     {"p0", 10.0},
                      {"force_noise", 0.01}, {"kf_start_pref_v", 1.0}, {"kf_limit_pref_v", 1.0},
                      {"nselect", 8},        {"groupsize", 4}};
  o.update(more);
  return o;
}

// What a step is told of a batch of `system` with forces and virials.
inline SystemInfo labelled_info(const System& system) {
  SystemInfo info;
  static_cast<SystemAtoms&>(info) = system;
  info.has_force = true;
  info.has_virial = true;
  return info;
}

}  // namespace deepkf::test
