// deepkf export CKPT -o MODEL: the self-describing model file (what `pair_style deepkf` loads) from a
// training checkpoint.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "src/cli/Commands.hpp"
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
}

}  // namespace

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
