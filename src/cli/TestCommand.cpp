// deepkf test -m MODEL -s SYSTEM... : prediction errors of a model on labelled data, per system and overall
// (energy per atom, force and virial RMSE and MAE), a per-frame results file and an SVG parity plot, and
// with -d DeePMD-kit's detail files. -f (a file of system paths), -n (frames per system), --train-data and
// --valid-data (the data of a training input), --shuffle-test and -r are `dp test`'s.
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

#include "src/cli/Commands.hpp"
#include "src/cli/Threads.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/core/Random.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/FrameSource.hpp"
#include "src/eval/DetailFiles.hpp"
#include "src/eval/LabelledErrors.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf::cli {
namespace {

struct TestArgs {
  std::string model;
  std::vector<std::string> systems;
  std::string datafile;
  std::string output = "test";
  std::string detail;
  std::string train_data, valid_data;  // training inputs whose data to test on
  std::int64_t numb_test = 0;
  bool shuffle = false;
  std::uint64_t seed = 0;  // for the shuffle; 0: from the clock, as dp test without -r
  int batch = 8;
  int threads = 0;
};

// The system paths of a `dp test -f` file: one per line; blank lines and lines starting with # are skipped.
std::vector<std::string> read_datafile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError("cannot read the list of systems " + path);
  std::vector<std::string> systems;
  std::string line;
  while (std::getline(in, line)) {
    const auto begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos || line[begin] == '#') continue;
    const auto end = line.find_last_not_of(" \t\r");
    systems.push_back(line.substr(begin, end - begin + 1));
  }
  if (systems.empty()) throw DataError("the list of systems " + path + " names no system");
  return systems;
}

std::string metrics_row(const std::string& name, std::int64_t frames, const ErrorMetrics& m) {
  std::string row = fmt::format("{:<36} {:>7} {:>11.4e} {:>11.4e}", name, frames, m.rmse_e(), m.mae_e());
  row += m.has_force() ? fmt::format(" {:>11.4e} {:>11.4e}", m.rmse_f(), m.mae_f())
                       : fmt::format(" {:>11} {:>11}", "-", "-");
  row += m.has_virial() ? fmt::format(" {:>11.4e} {:>11.4e}", m.rmse_v(), m.mae_v())
                        : fmt::format(" {:>11} {:>11}", "-", "-");
  return row;
}

// Each tested system's frames as positions in its file (absent: all, in order), so that results name them.
using Positions = std::map<std::string, std::vector<std::int64_t>>;

// The data of a training input that `which` ("training_data" or "validation_data") names, as training
// takes it: validation_data's systems, or, where the input holds out validation_fraction of its training
// data instead, the held-out frames (or the rest for "training_data"), drawn as training draws them
// (the input's split mode and training.seed). Split parts are named "SOURCE (held out)" or "SOURCE
// (training part)", with their frames' file positions in `positions`.
std::vector<System> input_data(const std::string& input, const std::string& which,
                               const std::vector<std::string>& type_map, Positions& positions) {
  const TrainConfig cfg = TrainConfig::from_file(input);
  const bool split = cfg.validation_data.systems.empty() && cfg.validation_fraction > 0.0;
  const bool valid = which == "validation_data";
  const DataSection& d = valid && !split ? cfg.validation_data : cfg.training_data;
  if (d.systems.empty())
    throw ConfigError(fmt::format("deepkf test: {} has no training.{}.systems to test on", input, which));
  const std::string key = valid && !split ? "validation_data" : "training_data";
  const auto paths = resolve_system_paths(d.systems, cfg.base_dir, "training." + key + ".systems", cfg.file);
  Dataset data = Dataset::load(paths, type_map);
  if (!split) return std::move(data.systems);
  std::vector<std::int64_t> nframes;
  for (const auto& sys : data.systems) nframes.push_back(sys.nframes);
  const auto parts = validation_split(cfg, nframes);
  std::vector<System> out;
  std::int64_t frames = 0;
  for (const auto& part : valid ? parts.validation : parts.train) {
    System sys = select_frames(data.systems[static_cast<std::size_t>(part.system)], part.frames);
    sys.source += valid ? " (held out)" : " (training part)";
    positions[sys.source] = part.frames;
    frames += sys.nframes;
    out.push_back(std::move(sys));
  }
  const std::int64_t total = std::accumulate(nframes.begin(), nframes.end(), std::int64_t{0});
  fmt::print("{} of {}: {} of its {} frames (validation_fraction {}, training.seed {})\n",
             valid ? "held-out frames" : "training frames", input, frames, total, cfg.validation_fraction,
             cfg.seed);
  return out;
}

// Every system's frames in an order drawn from `seed` (dp test --shuffle-test): -n then takes a random
// sample. Each system's file positions follow its frames.
void shuffle_frames(Dataset& data, std::uint64_t seed, Positions& positions) {
  std::mt19937_64 rng(seed);
  for (auto& s : data.systems) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(s.nframes));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    shuffle(order, rng);
    s = select_frames(s, order);
    if (auto it = positions.find(s.source); it != positions.end()) {
      std::vector<std::int64_t> moved;
      for (const auto i : order) moved.push_back(it->second[static_cast<std::size_t>(i)]);
      it->second = std::move(moved);
    } else {
      positions[s.source] = order;
    }
  }
}

void run_test(const TestArgs& args) {
  set_torch_threads(args.threads);
  std::vector<std::string> systems = args.systems;
  if (!args.datafile.empty()) {
    const auto listed = read_datafile(args.datafile);
    systems.insert(systems.end(), listed.begin(), listed.end());
  }
  if (systems.empty() && args.train_data.empty() && args.valid_data.empty()) {
    throw DataError(
        "deepkf test: no data to test on; give systems with -s, a list with -f, or an input with "
        "--train-data or --valid-data");
  }
  const LoadedModel loaded = load_model(args.model, torch::kCPU);
  Dataset data;
  if (!systems.empty()) data = Dataset::load(systems, loaded.config.type_map);
  data.type_map = loaded.config.type_map;
  Positions positions;
  for (const auto& [input, which] :
       {std::pair{args.train_data, "training_data"}, std::pair{args.valid_data, "validation_data"}}) {
    if (input.empty()) continue;
    auto part = input_data(input, which, loaded.config.type_map, positions);
    std::move(part.begin(), part.end(), std::back_inserter(data.systems));
  }
  // A system without frames has no errors to report: left out with a warning, and an error if none is left.
  const auto empty = std::stable_partition(data.systems.begin(), data.systems.end(),
                                           [](const System& s) { return s.nframes > 0; });
  for (auto it = empty; it != data.systems.end(); ++it)
    fmt::print(stderr, "deepkf test: warning: system {} has no frames; left out\n", it->source);
  data.systems.erase(empty, data.systems.end());
  if (data.systems.empty()) throw DataError("deepkf test: the systems given have no frames: nothing to test");
  if (args.shuffle) {
    const std::uint64_t seed =
        args.seed != 0 ? args.seed : static_cast<std::uint64_t>(std::random_device{}());
    shuffle_frames(data, seed, positions);
    fmt::print("frames shuffled with seed {}\n", seed);
  }
  LabelledErrors result = labelled_errors(loaded, data, args.batch, args.numb_test);
  for (auto& fr : result.frames) {
    if (const auto it = positions.find(fr.system); it != positions.end())
      fr.frame = it->second[static_cast<std::size_t>(fr.frame)];
  }

  fmt::print("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "system", "frames", "rmse_e",
             "mae_e", "rmse_f", "mae_f", "rmse_v", "mae_v");
  fmt::print("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "", "", "eV/atom", "eV/atom", "eV/A",
             "eV/A", "eV/atom", "eV/atom");
  for (const auto& sys : result.systems) fmt::print("{}\n", metrics_row(sys.source, sys.frames, sys.metrics));
  fmt::print("{}\n", metrics_row("all systems", result.total_frames, result.total));

  const std::string table_path = args.output + ".frames.tsv";
  write_text_atomically(table_path, frames_table(result));
  const std::string plot_path = args.output + ".parity.svg";
  write_text_atomically(plot_path, parity_svg(result));
  fmt::print("per-frame results {}\nparity plot       {}\n", table_path, plot_path);
  if (!args.detail.empty()) {
    for (const auto& path : write_detail_files(result, args.detail))
      fmt::print("detail file       {}\n", path);
  }
}

}  // namespace

void add_test_command(CLI::App& app) {
  auto args = std::make_shared<TestArgs>();
  auto* cmd = app.add_subcommand("test", "Errors of a model on labelled data, per system and overall");
  cmd->add_option("-m,--model", args->model, "model file")->required()->check(CLI::ExistingFile);
  cmd->add_option(
      "-s,--system", args->systems,
      "systems: npy folders (or a folder searched for them), file.h5, file.h5#group, DeePMD-kit LMDB "
      "databases (*.lmdb), extended XYZ");
  cmd->add_option("-f,--datafile", args->datafile, "a file listing one system path per line (as dp test -f)");
  cmd->add_option("-n,--numb-test", args->numb_test, "test the first N frames of each system (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
         "--train-data", args->train_data,
         "test on the training data of this input file (dp test's; with validation_fraction the frames "
         "training kept)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--valid-data", args->valid_data,
                  "test on the validation data of this input file (dp test's; with validation_fraction the "
                  "frames training held out)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--shuffle-test", args->shuffle, "shuffle each system's frames before -n takes the first N");
  cmd->add_option("-r,--rand-seed", args->seed, "seed of --shuffle-test (default: from the clock)");
  cmd->add_option("-o,--output", args->output, "prefix of the output files")->capture_default_str();
  cmd->add_option("-d,--detail-file", args->detail,
                  "also write DeePMD-kit's detail files PREFIX.e.out, .e_peratom.out, .f.out, .v.out, "
                  ".v_peratom.out");
  cmd->add_option("-b,--batch", args->batch, "frames evaluated together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", args->threads, "LibTorch threads (0: one per core)")->capture_default_str();
  cmd->callback([args] { run_test(*args); });
}

}  // namespace deepkf::cli
