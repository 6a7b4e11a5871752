#pragma once
// The model file (default name model.pt): one self-describing LibTorch archive holding the weights, the
// statistics buffers and a metadata JSON string: {"format_version": 1, "model": ModelConfig::to_json(),
// "type_map", "rcut", "sel", "precision", "provenance": {...}}, and from format 2 the CRC-32 of the metadata
// text and of every tensor, checked on every load. Optional metadata entries: "training_range" (the
// training data's closest neighbours, TrainingRange) and, for a compressed model, "compression" (the
// tables' layout and settings, EmbeddingTable; the coefficients are tensors of the model). Written atomically
// (temporary file in the same directory, then rename).
#include <torch/types.h>

#include <nlohmann/json.hpp>
#include <string>

#include "src/model/DeepPot.hpp"
#include "src/model/ModelConfig.hpp"

namespace deepkf {

constexpr int kModelFormatVersion = 2;

struct LoadedModel {
  DeepPot model{nullptr};
  ModelConfig config;
  nlohmann::json provenance;  // as given to save_model (data paths, steps, optimizer, ...)
  int format_version = 0;
  std::string checksum = "none (format 1)";  // what was verified on loading
  nlohmann::json uncertainty_calibration;    // as given to save_model; null when the file has none
};

// Writes `model` (weights, davg/dstd, energy bias, config) and the opaque `provenance` object to `path`.
// Throws ModelError naming the file when it cannot be written.
void save_model(const std::string& path, const DeepPot& model, const nlohmann::json& provenance);
// The same with the calibration of the model's predicted uncertainty (docs/uncertainty.md) in the metadata,
// under "uncertainty_calibration" (covered by the metadata's checksum); null writes none.
void save_model(const std::string& path, const DeepPot& model, const nlohmann::json& provenance,
                const nlohmann::json& uncertainty_calibration);

// Reads a model written by save_model onto `device`. Throws ModelError naming the file when it is missing,
// truncated or corrupt (from format 2: any part whose checksum differs, named), a checkpoint, or has a
// format version newer than kModelFormatVersion; a DeePMD-kit model file is named as such
// (refuse_foreign_model_file).
LoadedModel load_model(const std::string& path, torch::Device device = torch::kCPU);
// Whether `path` is a training checkpoint (format 2 and later) rather than a model file.
bool is_training_checkpoint(const std::string& path);

// Only the metadata JSON of a model file (same errors as load_model).
nlohmann::json read_model_metadata(const std::string& path);

// Throws ModelError, one line naming the file and docs/from-deepmd-kit.md, when `path` is recognisably
// another program's model file: DeePMD-kit's frozen TensorFlow graph (.pb), or a readable PyTorch archive
// (DeePMD-kit's .pth model or .pt checkpoint) without deepkf's metadata. Returns for anything else, deepkf's
// own files (corrupt ones included) and files it cannot tell.
void refuse_foreign_model_file(const std::string& path);

}  // namespace deepkf
