// deepkf info MODEL: what a model file holds (types, cutoffs, sel, network sizes, precision, format version,
// checksum, provenance, parameter counts).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "src/cli/Commands.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf::cli {

namespace {

void print_info(const std::string& path) {
  const auto loaded = load_model(path, torch::kCPU);
  const auto& c = loaded.config;
  fmt::print("model file      {}\n", path);
  fmt::print("format version  {}\n", loaded.format_version);
  fmt::print("checksum        {}\n", loaded.checksum);
  fmt::print("descriptor      se_e2_a, type_one_side {}, resnet_dt {}\n", c.type_one_side,
             c.embedding_resnet_dt);
  fmt::print("type map        {}\n", fmt::join(c.type_map, " "));
  fmt::print("rcut            {} A (switch from rcut_smth {} A)\n", c.rcut, c.rcut_smth);
  fmt::print("sel             {} (N_c = {})\n", fmt::join(c.sel, " "), c.nnei());
  fmt::print("embedding net   1 -> {}, axis_neuron {} (descriptor {} numbers)\n",
             fmt::join(c.embedding_neuron, " -> "), c.axis_neuron, c.descriptor_dim());
  fmt::print("fitting net     {} -> {} -> 1, resnet_dt {}\n", c.descriptor_dim(),
             fmt::join(c.fitting_neuron, " -> "), c.fitting_resnet_dt);
  fmt::print("precision       {}\n", c.precision_name());
  fmt::print("parameters      {} in total\n", loaded.model->parameter_count());
  for (const auto& [name, count] : loaded.model->parameter_counts()) {
    fmt::print("  {:<22} {}\n", name, count);
  }
  const auto bias = loaded.model->energy_bias().to(torch::kCPU, torch::kFloat64).contiguous();
  std::string biases;
  for (int t = 0; t < c.ntypes(); ++t) {
    biases += fmt::format("{}{} {:.6f}", t ? ", " : "", c.type_map[static_cast<std::size_t>(t)],
                          bias[t].item<double>());
  }
  fmt::print("energy bias     {} (eV)\n", biases);
  fmt::print("provenance      {}\n", loaded.provenance.dump(2));
  if (!loaded.uncertainty_calibration.is_null())
    fmt::print("uncertainty     calibration {}\n", loaded.uncertainty_calibration.dump());
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a model file: types, cutoffs, sizes, provenance");
  auto path = std::make_shared<std::string>();
  cmd->add_option("MODEL", *path, "model file written by training (model.pt)")->required();
  cmd->callback([path] { print_info(*path); });
}

}  // namespace deepkf::cli
