// deepkf model-devi -m A B ... -s DATA... [-o model_devi.out] [-f FREQ] [--relative L] [--relative_v L]
// [--atomic] [--real_error]: the model deviation of an ensemble on stored frames, in the layout of
// DeePMD-kit's `dp model-devi` (DP-GEN reads it): per system a comment line naming it, a column header, and
// one row per frame: the step, the virial and force deviations as pair_style deepkf writes them to
// model_devi.out during MD, devi_e, the deviation of the energy per atom, and with --atomic each atom's
// force deviation. --real_error takes the deviations from the labels instead of the ensemble mean.
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>

#include "src/cli/Commands.hpp"
#include "src/cli/Threads.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/data/FrameInputs.hpp"
#include "src/uncertainty/EnsembleDeviation.hpp"

namespace deepkf::cli {
namespace {

struct ModelDeviArgs {
  std::vector<std::string> models;
  std::vector<std::string> systems;
  std::vector<std::string> type_map;  // elements of LAMMPS types 1, 2, ... for dumps
  std::string output = "model_devi.out";
  std::int64_t frequency = 1;
  DeviationOptions options;
  int threads = 0;
};

// "# step      max_devi_v         ..." as numpy's savetxt prefixes dp model-devi's header.
std::string column_header() {
  std::string h = fmt::format("# {:<10}", "step");
  for (const char* name :
       {"max_devi_v", "min_devi_v", "avg_devi_v", "max_devi_f", "min_devi_f", "avg_devi_f", "devi_e"})
    h += fmt::format("{:<19}", name);
  return h + "\n";
}

void run_model_devi(const ModelDeviArgs& args) {
  set_torch_threads(args.threads);
  if (args.models.size() < 2)
    throw ConfigError(fmt::format(
        "deepkf model-devi: -m names {} model file(s); a deviation needs two or more", args.models.size()));
  if (args.systems.empty()) throw ConfigError("deepkf model-devi: give the frames to evaluate with -s");
  const Ensemble models = Ensemble::load(args.models);
  const FrameInputs frames =
      open_frames(args.systems, args.type_map, models[0].config().type_map, "model " + args.models.front());
  const auto rows = ensemble_deviation(models, frames.sets, args.options);

  std::string text;
  std::size_t next = 0;
  for (std::size_t s = 0; s < frames.sets.size(); ++s) {
    const auto& set = frames.sets[s];
    const auto& timesteps = frames.timesteps[s];
    text += "# " + set.info().source + "\n" + column_header();
    for (std::int64_t f = 0; f < set.nframes(); ++f, ++next) {
      // A dump's frames keep their timesteps; other frames are numbered f * frequency, as dp model-devi does.
      const std::int64_t step =
          timesteps.empty() ? f * args.frequency : timesteps[static_cast<std::size_t>(f)];
      const auto& d = rows[next].deviation;
      text += fmt::format("{:12d}", step);
      for (double v : {d.max_devi_v, d.min_devi_v, d.avg_devi_v, d.max_devi_f, d.min_devi_f, d.avg_devi_f,
                       rows[next].devi_e})
        text += fmt::format("{:19.6e}", v);
      for (double v : rows[next].atom_devi) text += fmt::format("{:19.6e}", v);
      text += "\n";
    }
  }
  write_text_atomically(args.output, text);
  fmt::print("model deviation of {} frames in {} systems by {} models written to {}\n", rows.size(),
             frames.sets.size(), models.size(), args.output);
}

}  // namespace

void add_model_devi_command(CLI::App& app) {
  auto args = std::make_shared<ModelDeviArgs>();
  auto* cmd = app.add_subcommand(
      "model-devi",
      "Model deviation of an ensemble on stored frames, in dp model-devi's layout (model_devi.out)");
  cmd->add_option("-m,--models", args->models, "two or more model files (as dp model-devi -m A B C)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-s,--system", args->systems,
                  "frames: npy folders (or a folder searched for them), file.h5, extended XYZ, LAMMPS dumps")
      ->required();
  cmd->add_option("-o,--output", args->output, "file to write")->capture_default_str();
  cmd->add_option("-f,--frequency", args->frequency,
                  "the step column is the frame index times this (LAMMPS dumps keep their timesteps)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--type-map", args->type_map, "elements of LAMMPS types 1, 2, ... in dumps");
  cmd->add_option("--relative", args->options.relative,
                  "force deviation relative to |<F>| + this level (eV/A), as dp model-devi --relative");
  cmd->add_option(
      "--relative_v,--relative-v", args->options.relative_v,
      "virial deviation relative to |<W>|/N + this level (eV/atom), as dp model-devi --relative_v");
  cmd->add_flag("--atomic", args->options.atomic,
                "append each atom's force deviation to its frame's row, as dp model-devi --atomic");
  cmd->add_flag(
      "--real_error,--real-error", args->options.real_error,
      "deviations from the frames' labels instead of the ensemble mean, as dp model-devi --real_error");
  cmd->add_option("--threads", args->threads, "LibTorch threads (0: one per core)")->capture_default_str();
  cmd->callback([args] { run_model_devi(*args); });
}

}  // namespace deepkf::cli
