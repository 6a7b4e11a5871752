// deepkf learn LOOP.json [-o DIR] [--seed N]: online learning (src/learn/LearningLoop.hpp). Started again on
// the same folder, it resumes after the last completed stage.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "src/cli/Commands.hpp"
#include "src/cli/ConsoleCopy.hpp"
#include "src/learn/LearnConfig.hpp"
#include "src/learn/LearningLoop.hpp"

namespace deepkf::cli {
namespace {

struct LearnArgs {
  std::string input;
  std::string output_dir = ".";
  std::optional<std::uint64_t> seed;  // replaces the input's seed (a replicate of the same loop)
};

void run_learn(const LearnArgs& args) {
  keep_console_copy_out_of((std::filesystem::path(args.output_dir) / "learn.log").string());
  LearnConfig cfg = LearnConfig::from_file(args.input);
  if (args.seed) cfg.seed = *args.seed;
  LearningLoop loop(std::move(cfg), args.output_dir);
  const std::string why = loop.run();
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(args.output_dir).lexically_normal();
  std::printf("\nstopped: %s\n", why.c_str());
  std::printf("record          %s\n", (dir / "iterations.jsonl").c_str());
  std::printf("chart           %s\n", (dir / "iterations.svg").c_str());
  std::printf("labelled frames %s\n", (dir / "labels.h5").c_str());
  std::printf("log             %s\n", (dir / "learn.log").c_str());
}

}  // namespace

void add_learn_command(CLI::App& app) {
  auto args = std::make_shared<LearnArgs>();
  auto* cmd = app.add_subcommand(
      "learn",
      "Online learning: train, explore with LAMMPS, select uncertain frames, label them with CP2K, repeat");
  cmd->add_option("INPUT", args->input, "loop input (loop.json)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->output_dir, "folder of the loop (resumed when it holds one)")
      ->capture_default_str();
  cmd->add_option(
      "--seed", args->seed,
      "replaces the input's seed (MD velocities, the order candidates are drawn in): a replicate");
  cmd->callback([args] { run_learn(*args); });
}

}  // namespace deepkf::cli
