// deepkf plan INPUT.json [--np N] [--ranks-per-node M]: the memory plan of a training run, without training
// (docs/input.md, "Memory plan"): what one rank needs for the covariance (or Adam's state), the weights and
// one batch, against what this machine has. Exits 1 with the options that would fit when it does not.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "src/cli/Commands.hpp"
#include "src/core/Communicator.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/Optimizers.hpp"
#include "src/train/TrainingDevice.hpp"

namespace deepkf::cli {
namespace {

struct PlanArgs {
  std::string input;
  int np = 1;
  int ranks_per_node = 0;  // 0: all on this node
};

void run_plan(const PlanArgs& args) {
  const TrainConfig cfg = TrainConfig::from_file(args.input);
  const auto comm = make_serial_communicator();
  // The set-up's own messages (data, sel) are not part of the plan.
  spdlog::logger quiet("plan");
  const TrainingData data = open_training_data(cfg, *comm, quiet);
  ModelConfig mcfg = ModelConfig::from_json(cfg.model, cfg.file);
  resolve_sel(mcfg, data.train, *comm, quiet);
  mcfg.validate();
  const DeepPot model(mcfg);
  const torch::Device device = training_device(cfg, *comm);
  const int per_node = args.ranks_per_node > 0 ? args.ranks_per_node : args.np;
  const StepResources res = step_resources(device, available_memory(device, per_node), args.np, data, mcfg);
  fmt::print("{}: {} parameters, {} on {} rank{} ({} per node)\n{}\n", args.input, model->parameter_count(),
             cfg.optimizer, args.np, args.np > 1 ? "s" : "", per_node,
             plan_training_step(cfg, model, args.np, res));
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan", "Show the memory a training run needs and the settings that fit");
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("INPUT", args->input, "training input file (input.json)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--np", args->np, "ranks of the run (mpirun -np)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--ranks-per-node", args->ranks_per_node,
                  "ranks sharing this machine's memory (default: all of --np)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->callback([args] { run_plan(*args); });
}

}  // namespace deepkf::cli
