#pragma once
// Training checkpoints: one LibTorch archive with the model (config, weights, statistics), the optimizer's
// state and a JSON record of the run (step, data position, the resolved input, provenance). Written
// atomically, so a run killed while writing keeps its previous checkpoint.
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <nlohmann/json.hpp>
#include <string>

#include "src/model/DeepPot.hpp"

namespace deepkf {

constexpr int kCheckpointFormatVersion = 1;

struct LoadedCheckpoint {
  nlohmann::json meta;  // {"format_version", "step", "epoch", "position", "config", "model", "optimizer", ...}
  DeepPot model{nullptr};
  torch::serialize::InputArchive optimizer;  // the optimizer's state
};

// meta must hold "model" (ModelConfig::to_json()); format_version is added.
// `optimizer` holds the optimizer's state (written by its save()).
void write_checkpoint(const std::string& path, const DeepPot& model, nlohmann::json meta,
                      torch::serialize::OutputArchive& optimizer);

// Throws ModelError naming the file for a missing, corrupt or newer-version checkpoint.
LoadedCheckpoint read_checkpoint(const std::string& path, torch::Device device);

}  // namespace deepkf
