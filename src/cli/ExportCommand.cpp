// deepkf export CKPT -o MODEL: the self-describing model file (what `pair_style deepkf` loads) from a
// training checkpoint. deepkf freeze [-c DIR] [-o MODEL] is the same in `dp freeze`'s spelling: the
// checkpoint model.ckpt in the training's output folder DIR (default: the working directory).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "src/cli/Commands.hpp"
#include "src/core/Error.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Checkpoint.hpp"

namespace deepkf::cli {
namespace {

void run_export(const std::string& checkpoint, const std::string& output) {
  const LoadedCheckpoint ckpt = read_checkpoint(checkpoint, torch::kCPU);
  nlohmann::json provenance = ckpt.meta.value("provenance", nlohmann::json::object());
  provenance["checkpoint"] = checkpoint;
  provenance["steps"] = ckpt.meta.value("step", 0);
  // The calibration of the predicted uncertainty, when training fitted one (docs/uncertainty.md).
  save_model(output, ckpt.model, provenance, ckpt.meta.value("uncertainty_calibration", nlohmann::json()));
  std::printf("model written to %s (%lld parameters, step %lld)\n", output.c_str(),
              static_cast<long long>(ckpt.model->parameter_count()),
              static_cast<long long>(ckpt.meta.value("step", 0)));
  // The model needs only the weights (checked as the archive was read); the covariance blocks after them
  // are for a restart. Each is read and checked against its checksum, so that damage there is reported now
  // rather than when a restart needs them.
  for (std::int64_t i = 0; i < ckpt.covariance_blocks; ++i) {
    try {
      ckpt.covariance_block(i);
    } catch (const Error& e) {
      std::fprintf(stderr,
                   "warning: the checkpoint's Kalman covariance is damaged (%s); the weights are intact and "
                   "the model file is good, but --restart from %s would fail: continue training with "
                   "--init-model %s instead\n",
                   e.what(), checkpoint.c_str(), output.c_str());
      return;
    }
  }
}

// dp freeze -c takes a folder; a checkpoint file is taken as well.
std::string checkpoint_in(const std::string& folder_or_file) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(folder_or_file)) {
    if (!fs::exists(folder_or_file))
      throw ConfigError("deepkf freeze: -c " + folder_or_file + ": no such folder or checkpoint file");
    return folder_or_file;
  }
  const auto path = (fs::path(folder_or_file) / "model.ckpt").string();
  if (!fs::exists(path)) {
    throw ConfigError("deepkf freeze: no checkpoint model.ckpt in " + folder_or_file +
                      " (deepkf train writes it into its -o folder; give that folder with -c)");
  }
  return path;
}

}  // namespace

void add_freeze_command(CLI::App& app) {
  auto folder = std::make_shared<std::string>(".");
  auto output = std::make_shared<std::string>("frozen_model.pth");
  auto* cmd = app.add_subcommand(
      "freeze", "dp freeze's spelling of export: the model file from the checkpoint in a training folder");
  cmd->add_option("-c,--checkpoint-folder", *folder, "the training's output folder (or its model.ckpt)")
      ->capture_default_str();
  cmd->add_option("-o,--output", *output, "model file to write")->capture_default_str();
  cmd->callback([folder, output] { run_export(checkpoint_in(*folder), *output); });
}

void add_export_command(CLI::App& app) {
  auto checkpoint = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>("model.pt");
  auto* cmd = app.add_subcommand("export", "Write the model file for LAMMPS from a training checkpoint");
  cmd->add_option("CKPT", *checkpoint, "checkpoint written by deepkf train")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", *output, "model file to write")->capture_default_str();
  cmd->callback([checkpoint, output] { run_export(*checkpoint, *output); });
}

}  // namespace deepkf::cli
