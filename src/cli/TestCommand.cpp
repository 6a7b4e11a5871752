// deepkf test -m MODEL -s SYSTEM... : prediction errors of a model on labelled data, per system and overall
// (energy per atom, force and virial RMSE and MAE), a per-frame results file and an SVG parity plot, and
// with -d DeePMD-kit's detail files. -f (a file of system paths) and -n (frames per system) are `dp test`'s.
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <memory>

#include "src/cli/Commands.hpp"
#include "src/cli/Threads.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/eval/DetailFiles.hpp"
#include "src/eval/ModelTest.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf::cli {
namespace {

struct TestArgs {
  std::string model;
  std::vector<std::string> systems;
  std::string datafile;
  std::string output = "test";
  std::string detail;
  std::int64_t numb_test = 0;
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

void run_test(const TestArgs& args) {
  set_torch_threads(args.threads);
  std::vector<std::string> systems = args.systems;
  if (!args.datafile.empty()) {
    const auto listed = read_datafile(args.datafile);
    systems.insert(systems.end(), listed.begin(), listed.end());
  }
  if (systems.empty())
    throw DataError("deepkf test: no data to test on; give systems with -s or a list with -f");
  const LoadedModel loaded = load_model(args.model, torch::kCPU);
  const Dataset data = Dataset::load(systems, loaded.config.type_map);
  const ModelTestResult result = test_model(loaded, data, args.batch, args.numb_test);

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
      "systems: npy folders (or a folder searched for them), file.h5, file.h5#group, extended XYZ");
  cmd->add_option("-f,--datafile", args->datafile, "a file listing one system path per line (as dp test -f)");
  cmd->add_option("-n,--numb-test", args->numb_test, "test the first N frames of each system (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
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
