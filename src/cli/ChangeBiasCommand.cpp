// deepkf change-bias MODEL -s SYSTEM... [-m change|set] [-n N] [-o OUT] | -b E1 E2 ...: a copy of a model
// file with its per-type energy bias refitted on other labelled frames, as `dp change-bias` does (its
// spelling works: -s, -m, -n, -b, -o); docs/input.md, "The energy bias of a finished model".
//   change: least squares of the model's energy errors on the frames, per atom, added to the bias (the fit
//           `change_bias_after_training` applies after training, docs/input.md).
//   set:    the bias from the frames' labels alone, as a fresh training would set it.
//   -b:     the given values, one per element of the model's type map.
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/cli/Commands.hpp"
#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/data/FrameInputs.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/EnergyBiasRefit.hpp"

namespace deepkf::cli {
namespace {

struct ChangeBiasArgs {
  std::string model;
  std::vector<std::string> systems;
  std::vector<double> values;  // -b
  std::string mode = "change";
  std::int64_t numb_batch = 0;  // frames per system; 0: all
  std::string output;
};

// dp change-bias's default output name: model.pt -> model_updated.pt.
std::string default_output(const std::string& model) {
  const std::string ext = ".pt";
  if (model.size() > ext.size() && model.compare(model.size() - ext.size(), ext.size(), ext) == 0)
    return model.substr(0, model.size() - ext.size()) + "_updated.pt";
  return model + "_updated.pt";
}

std::string bias_text(const torch::Tensor& bias, const std::vector<std::string>& type_map) {
  const auto b = bias.to(torch::kCPU, torch::kFloat64).contiguous();
  std::string text;
  for (std::size_t t = 0; t < type_map.size(); ++t)
    text += fmt::format("{}{} {:.6f}", t ? ", " : "", type_map[t],
                        b[static_cast<std::int64_t>(t)].item<double>());
  return text;
}

void run_change_bias(ChangeBiasArgs args) {
  if (args.output.empty()) args.output = default_output(args.model);
  LoadedModel loaded = load_model(args.model, torch::kCPU);
  DeepPot& model = loaded.model;
  const auto& type_map = loaded.config.type_map;
  const auto before = model->energy_bias().clone();
  nlohmann::json record = {{"from", args.model}};
  if (!args.values.empty()) {
    if (args.values.size() != type_map.size()) {
      throw ConfigError(
          fmt::format("deepkf change-bias: -b gives {} values, but model {} has {} elements ({})",
                      args.values.size(), args.model, type_map.size(), fmt::join(type_map, ", ")));
    }
    model->set_energy_bias(torch::tensor(args.values, torch::kFloat64));
    record["mode"] = "values";
  } else {
    if (args.systems.empty())
      throw ConfigError("deepkf change-bias: give the labelled frames with -s, or the values with -b");
    if (args.numb_batch < 0)
      throw ConfigError(
          fmt::format("deepkf change-bias: -n {} must be 0 (all frames) or more", args.numb_batch));
    FrameInputs frames = open_frames(args.systems, {}, type_map, "model " + args.model);
    std::int64_t total = 0;
    for (auto& set : frames.sets) {
      if (args.numb_batch > 0 && set.nframes() > args.numb_batch) set.frames.resize(args.numb_batch);
      total += set.nframes();
    }
    const std::vector<int> chunk(frames.sets.size(), 8);
    auto comm = make_serial_communicator();
    if (args.mode == "change") {
      const BiasRefit fit = refit_energy_bias(model, {frames.sets, chunk}, torch::kCPU, *comm);
      for (const auto& w : fit.warnings) fmt::print("warning: {}\n", w);
      fmt::print("energy rmse on {} frames in {} systems: {:.4e} -> {:.4e} eV/atom\n", fit.frames,
                 frames.sets.size(), fit.rmse_before, fit.rmse_after);
    } else {
      const EnergyBias fit = label_energy_bias(model->config(), {frames.sets, chunk}, before, *comm);
      for (const auto& w : fit.warnings) fmt::print("warning: {}\n", w);
      model->set_energy_bias(fit.bias);
      fmt::print("energy bias from the labels of {} frames in {} systems\n", total, frames.sets.size());
    }
    record["mode"] = args.mode;
    record["systems"] = args.systems;
    record["frames"] = total;
  }
  fmt::print("energy bias (eV) before: {}\n", bias_text(before, type_map));
  fmt::print("energy bias (eV) after:  {}\n", bias_text(model->energy_bias(), type_map));
  nlohmann::json provenance = loaded.provenance;
  provenance["bias_changed"] = record;
  save_model(args.output, model, provenance, loaded.uncertainty_calibration);  // null: none
  fmt::print("model written to {}\n", args.output);
}

}  // namespace

void add_change_bias_command(CLI::App& app) {
  auto args = std::make_shared<ChangeBiasArgs>();
  auto* cmd = app.add_subcommand(
      "change-bias", "Refit a model's per-element energy bias on labelled frames (dp change-bias)");
  cmd->add_option("MODEL", args->model, "model file")->required()->check(CLI::ExistingFile);
  auto* systems = cmd->add_option("-s,--system", args->systems,
                                  "labelled frames: npy folders, folders of systems, file.h5, file.h5#group, "
                                  "extended XYZ");
  cmd->add_option("-b,--bias-value", args->values, "the bias of each element of the model's type map (eV)")
      ->excludes(systems);
  cmd->add_option("-m,--mode", args->mode,
                  "change: add the least-squares fit of the model's energy errors; set: the bias from the "
                  "labels alone")
      ->check(CLI::IsMember({"change", "set"}))
      ->capture_default_str();
  cmd->add_option("-n,--numb-batch", args->numb_batch, "frames used per system (0: all)")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output,
                  "model file to write (default: MODEL with _updated before .pt)");
  cmd->callback([args] { run_change_bias(*args); });
}

}  // namespace deepkf::cli
