// deepkf plan INPUT.json [--np N] [--ranks-per-node M]: the memory plan of a training run, without training
// (docs/input.md, "Memory plan"): what one rank needs for the covariance (or Adam's state), the weights and
// one batch, against what this machine has. Exits 1 with the options that would fit when it does not.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "src/cli/Commands.hpp"
#include "src/train/RunPlan.hpp"

namespace deepkf::cli {
namespace {

struct PlanArgs {
  std::string input;
  int np = 1;
  int ranks_per_node = 0;  // 0: all on this node
};

void run_plan(const PlanArgs& args) {
  fmt::print("{}\n", plan_training_run(args.input, args.np, args.ranks_per_node));
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
