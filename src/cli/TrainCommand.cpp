// deepkf train INPUT.json [--restart CKPT | --continue CKPT | --init-model MODEL|CKPT] [-o DIR]: fit a model.
// `dp train`'s spellings work too: -r CKPT, -i CKPT, -f/--init-frz-model MODEL, -t/--finetune MODEL,
// --skip-neighbor-stat, --use-pretrain-script.
// Under mpirun every rank runs this command; a rank-local error ends the whole job with its message
// (MPI_Abort), never a hang.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "src/cli/Commands.hpp"
#include "src/cli/ConsoleCopy.hpp"
#include "src/cli/MpiSession.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/train/StopSignal.hpp"
#include "src/train/Trainer.hpp"

namespace deepkf::cli {
namespace {

struct TrainArgs {
  std::string input;
  std::string restart;
  std::string continue_from;
  std::string init_model;
  std::string init_frozen;  // dp train -f
  std::string finetune;     // dp train -t
  bool use_pretrain_script = false;
  std::string output_dir = ".";
  bool no_progress = false;
  bool skip_neighbor_stat = false;
};

// dp train's -o names a JSON file for the resolved parameters, deepkf's the output folder: a name ending in
// .json that is not a folder is read as dp train's.
bool is_dp_parameter_file(const std::string& output) {
  namespace fs = std::filesystem;
  const std::string ext = ".json";
  return output.size() > ext.size() && output.compare(output.size() - ext.size(), ext.size(), ext) == 0 &&
         !fs::is_directory(output);
}

// The trainer's options from the command line; rank 0 prints a note for dp options that change nothing.
TrainerOptions trainer_options(const TrainArgs& args, bool root) {
  TrainerOptions options;
  options.output_dir = args.output_dir;
  options.restart = args.restart;
  options.continue_from = args.continue_from;
  options.init_model = !args.init_model.empty()    ? args.init_model
                       : !args.init_frozen.empty() ? args.init_frozen
                                                   : args.finetune;
  options.finetune = !args.finetune.empty();
  if (args.use_pretrain_script && root) {
    std::printf(
        "note: --use-pretrain-script changes nothing: a run that starts from a model keeps that model's "
        "architecture (the input's model section chooses only which weights to train)\n");
  }
  if (args.skip_neighbor_stat && root) {
    std::printf(
        "note: --skip-neighbor-stat changes nothing: deepkf always gathers the neighbour statistics "
        "(automatic sel, the training range that compression uses)\n");
  }
  options.progress = args.no_progress ? 0 : -1;
  return options;
}

// The lines after a run: how it ended, the validation errors, and where its files are.
void print_outcome(const TrainResult& r, const TrainConfig& config, const std::string& output_dir) {
  namespace fs = std::filesystem;
  const auto shown = [](const fs::path& p) { return fs::absolute(p).lexically_normal().string(); };
  const fs::path dir = output_dir;
  std::printf("\n%s after %lld steps in %.1f s\n", r.interrupted ? "stopped" : "finished",
              static_cast<long long>(r.steps), r.wall_seconds);
  if (r.validation.e_count > 0) {
    std::printf("validation RMSE (%lld frames): energy %.3e eV/atom, force %.3e eV/A",
                static_cast<long long>(r.validation.e_count), r.validation.rmse_e(), r.validation.rmse_f());
    if (r.validation.has_virial()) std::printf(", virial %.3e eV/atom", r.validation.rmse_v());
    std::printf("\n");
  }
  std::printf("learning curve  %s\n", shown(dir / config.disp_file).c_str());
  std::printf("checkpoint      %s\n", shown(r.checkpoint).c_str());
  if (!r.model.empty()) std::printf("model           %s\n", shown(r.model).c_str());
  if (!r.model_average.empty()) {
    std::printf("model (EMA)     %s", shown(r.model_average).c_str());
    if (r.validation_average.e_count > 0) {
      std::printf("  validation RMSE: energy %.3e eV/atom, force %.3e eV/A", r.validation_average.rmse_e(),
                  r.validation_average.rmse_f());
    }
    std::printf("\n");
  }
  std::printf("log             %s\n", shown(dir / "train.log").c_str());
}

void run_train(TrainArgs args) {
  std::string parameter_file;
  const bool dp_output = is_dp_parameter_file(args.output_dir);
  keep_console_copy_out_of((std::filesystem::path(dp_output ? "." : args.output_dir) / "train.log").string());
  if (dp_output) {
    parameter_file = args.output_dir;
    args.output_dir = ".";
    std::error_code ec;
    if (std::filesystem::equivalent(parameter_file, args.input, ec)) {
      throw ConfigError("-o " + parameter_file + " names the input file " + args.input +
                        ": as in dp train, -o FILE.json receives the resolved parameters and would overwrite "
                        "the input; give another name, or an output folder");
    }
  }
  const int status = run_with_mpi([&](std::shared_ptr<Communicator> comm) {
    const TrainConfig config = TrainConfig::from_file(args.input);
    const bool root = comm->rank() == 0;
    if (!parameter_file.empty() && root) {
      std::printf(
          "note: -o %s is read as dp train's: the resolved parameters go to %s (as input.resolved.json), "
          "the outputs to the current folder\n",
          parameter_file.c_str(), parameter_file.c_str());
    }
    Trainer trainer(config, trainer_options(args, root), comm);
    const TrainResult r = trainer.run();
    if (!parameter_file.empty() && root) {
      std::ifstream resolved(std::filesystem::path(args.output_dir) / "input.resolved.json");
      std::stringstream text;
      text << resolved.rdbuf();
      write_text_atomically(parameter_file, text.str());
    }
    if (root) print_outcome(r, config, args.output_dir);
    // A run stopped by SIGTERM/SIGINT is not finished: exit as the signal would (128 + its number), so that
    // a batch scheduler sees the preemption; the checkpoint is written.
    return r.interrupted ? 128 + StopSignal::signal_number() : 0;
  });
  if (status != 0) std::exit(status);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train a Deep Potential from a DeePMD-kit style input file");
  cmd->add_option("INPUT", args->input, "input file (input.json)")->required()->check(CLI::ExistingFile);
  auto* restart = cmd->add_option("-r,--restart", args->restart, "continue from this checkpoint")
                      ->check(CLI::ExistingFile);
  cmd->add_option(
         "--continue", args->continue_from,
         "go on learning from this checkpoint's weights and optimizer state on the input's data, which "
         "may have grown (the data order starts afresh)")
      ->check(CLI::ExistingFile)
      ->excludes(restart);
  auto* init = cmd->add_option("-i,--init-model", args->init_model,
                               "start from the weights of this model file or checkpoint (fine-tuning)")
                   ->check(CLI::ExistingFile);
  auto* frozen =
      cmd->add_option("-f,--init-frz-model", args->init_frozen, "the same for a model file, as dp train -f")
          ->check(CLI::ExistingFile)
          ->excludes(init);
  cmd->add_option(
         "-t,--finetune", args->finetune,
         "fine-tune this model: its weights, with its energy bias first refitted to the training data "
         "(dp train -t)")
      ->check(CLI::ExistingFile)
      ->excludes(init)
      ->excludes(frozen)
      ->excludes(restart);
  cmd->add_flag("--use-pretrain-script", args->use_pretrain_script,
                "dp train's flag: accepted; the pretrained model's architecture is always the one trained");
  cmd->add_flag("--skip-neighbor-stat", args->skip_neighbor_stat,
                "dp train's flag: accepted, changes nothing (the statistics are always gathered)");
  cmd->add_option(
         "-o,--output", args->output_dir,
         "directory for the outputs (a name ending in .json: dp train's file for the resolved parameters, "
         "the outputs then in the current folder)")
      ->capture_default_str();
  cmd->add_flag("--no-progress", args->no_progress, "no progress bar");
  cmd->callback([args] { run_train(*args); });
}

}  // namespace deepkf::cli
