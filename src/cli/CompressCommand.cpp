// deepkf compress MODEL -o OUT [--step H] [--extrapolate X] [--min-distance R]: a compressed copy of a model
// file, its embedding nets replaced by tables of piecewise quintic polynomials (docs/compression.md).
// `dp compress`'s spelling works too: -i MODEL, -s H, -e X; its -t (training script) and -f (overflow
// check frequency) are accepted and have nothing to do here, which is said.
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "src/cli/Commands.hpp"
#include "src/core/Error.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf::cli {
namespace {

struct CompressArgs {
  std::string model;
  std::string input;  // -i, as dp compress
  std::string output = "model-compressed.pt";
  std::string training_script;
  int frequency = -1;
  TableSettings settings;
};

void run_compress(CompressArgs args) {
  if (args.model.empty()) args.model = args.input;
  if (args.model.empty())
    throw ConfigError("deepkf compress: give the model file to compress (MODEL or -i MODEL)");
  if (!args.training_script.empty()) {
    fmt::print(
        "note: -t {} is not needed: the model file records the closest neighbours of its training data "
        "(or give --min-distance)\n",
        args.training_script);
  }
  if (args.frequency > 0) {
    fmt::print(
        "note: -f {} (overflow checks during MD) has no counterpart: the LAMMPS plugin warns the first "
        "time a neighbour falls beyond the tables\n",
        args.frequency);
  }
  if (args.output == args.model) {
    throw ConfigError("deepkf compress: the output file (-o " + args.output +
                      ") must differ from the model file it reads");
  }
  LoadedModel loaded = load_model(args.model, torch::kCPU);
  auto& model = loaded.model;
  if (model->compressed()) {
    throw ModelError(
        fmt::format("model file '{}' is already compressed (step {}, made from {}); compress the "
                    "uncompressed model it was made from",
                    args.model, model->table().to_json().value("step", 0.0),
                    loaded.provenance.value("compressed_from", std::string("an unnamed file"))));
  }
  model->compress(args.settings);
  const auto& table = model->table();
  const auto& layout = table.to_json();
  fmt::print("range           {}\n", layout.value("range", std::string()));
  fmt::print("step            {} (fine), {} (coarse, up to {} x the largest s)\n", layout.value("step", 0.0),
             layout.value("coarse_step", 0.0), layout.value("extrapolate", 0.0));
  fmt::print("{:<22} {:>12} {:>12} {:>8} {:>8} {:>12} {:>12}\n", "table", "x from", "x to", "fine", "coarse",
             "max |dG|", "max |dG'|");
  for (std::size_t k = 0; k < table.size(); ++k) {
    const auto& g = table.grid(k);
    const auto& e = table.error(k);
    fmt::print("{:<22} {:>12.5f} {:>12.5f} {:>8} {:>8} {:>12.3e} {:>12.3e}\n",
               layout["tables"][k].value("net", std::string()), g.x0, g.end(), g.nfine, g.ncoarse,
               std::max(e.value_fine, e.value_coarse), std::max(e.slope_fine, e.slope_coarse));
  }
  nlohmann::json provenance = loaded.provenance;
  provenance["compressed_from"] = args.model;
  save_model(args.output, model, provenance);
  fmt::print("compressed model written to {} ({:.1f} MB of tables)\n", args.output,
             static_cast<double>(table.bytes()) / 1e6);
}

}  // namespace

void add_compress_command(CLI::App& app) {
  auto args = std::make_shared<CompressArgs>();
  auto* cmd = app.add_subcommand(
      "compress", "Tabulate a model's embedding nets for faster evaluation (LAMMPS, deepkf test)");
  auto* positional =
      cmd->add_option("MODEL", args->model, "model file (uncompressed)")->check(CLI::ExistingFile);
  cmd->add_option("-i,--input", args->input, "the model file, as dp compress -i")
      ->check(CLI::ExistingFile)
      ->excludes(positional);
  cmd->add_option("-o,--output", args->output, "compressed model file to write")->capture_default_str();
  cmd->add_option("-s,--step", args->settings.step,
                  "knot spacing in the embedding nets' input over the training range")
      ->capture_default_str();
  cmd->add_option("-e,--extrapolate", args->settings.extrapolate,
                  "the coarse region (10 x the step) reaches this multiple of the largest s seen in training")
      ->capture_default_str();
  cmd->add_option(
      "-t,--training-script", args->training_script,
      "dp compress's training input: accepted, not needed (the model records its training range)");
  cmd->add_option("-f,--frequency", args->frequency,
                  "dp compress's overflow check frequency: accepted, no counterpart");
  cmd->add_option_function<double>(
         "--min-distance",
         [args](double r) {
           args->settings.min_distance = r;
           args->settings.min_distance_given = true;
         },
         "closest distance (A) the fine region covers for every type pair; without it, the training "
         "range's own, or 0.5 A for models that do not record one")
      ->type_name("FLOAT");
  cmd->callback([args] { run_compress(*args); });
}

}  // namespace deepkf::cli
