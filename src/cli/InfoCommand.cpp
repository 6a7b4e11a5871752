// deepkf info MODEL: what a model file holds (types, cutoffs, sel, network sizes, precision, format version,
// checksum, provenance, parameter counts, the training range and, for a compressed model, its tables).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "src/cli/Commands.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf::cli {

namespace {

void print_training_range(const TrainingRange& range, const ModelConfig& c) {
  if (range.empty()) {
    fmt::print("training range  not recorded (model written before deepkf recorded it)\n");
    return;
  }
  std::vector<std::string> pairs;
  for (int i = 0; i < c.ntypes(); ++i) {
    for (int t = 0; t < c.ntypes(); ++t) {
      const auto name =
          c.type_map[static_cast<std::size_t>(i)] + "-" + c.type_map[static_cast<std::size_t>(t)];
      pairs.push_back(range.seen(i, t) ? fmt::format("{} {:.3f}", name, range.min_distance(i, t))
                                       : name + " none");
    }
  }
  fmt::print("training range  closest neighbours (A, centre-neighbour, {} frames): {}\n", range.frames(),
             fmt::join(pairs, ", "));
}

void print_compression(const DeepPot& model) {
  if (!model->compressed()) {
    fmt::print("compressed      no\n");
    return;
  }
  const auto& table = model->table();
  const auto& layout = table.to_json();
  fmt::print("compressed      yes: step {}, coarse step {}, up to {} x the largest s; {:.1f} MB of tables\n",
             layout.value("step", 0.0), layout.value("coarse_step", 0.0), layout.value("extrapolate", 0.0),
             static_cast<double>(table.bytes()) / 1e6);
  fmt::print("  range         {}\n", layout.value("range", std::string()));
  for (std::size_t k = 0; k < table.size(); ++k) {
    const auto& g = table.grid(k);
    const auto& e = table.error(k);
    fmt::print(
        "  {:<22} x in [{:.5f}, {:.5f}] fine to {:.5f}: {} + {} intervals, max |dG| {:.2e}, "
        "max |dG'| {:.2e}\n",
        layout["tables"][k].value("net", std::string()), g.x0, g.end(), g.fine_end(), g.nfine, g.ncoarse,
        std::max(e.value_fine, e.value_coarse), std::max(e.slope_fine, e.slope_coarse));
  }
}

void print_info(const std::string& path) {
  const auto loaded = load_model(path, torch::kCPU);
  const auto& c = loaded.config;
  fmt::print("model file      {}\n", path);
  fmt::print("format version  {}\n", loaded.format_version);
  fmt::print("checksum        {}\n", loaded.checksum);
  fmt::print("type map        {}\n", fmt::join(c.type_map, " "));
  if (c.hybrid()) {
    fmt::print("descriptor      hybrid of {}, read from one neighbour list of rcut {} A, sel {}\n",
               c.parts.size(), c.rcut, fmt::join(c.sel, " "));
  }
  const auto parts = c.descriptor_parts();
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const auto& p = parts[k];
    const std::string label = c.hybrid() ? fmt::format(" d{}", k) : "";
    if (p.three_body() || p.three_body_tebd()) {
      fmt::print("descriptor{:<6}{} (nets of neighbour pairs), resnet_dt {}\n", label, p.descriptor,
                 p.embedding_resnet_dt);
    } else {
      fmt::print("descriptor{:<6}{}, type_one_side {}, resnet_dt {}\n", label, p.descriptor, p.type_one_side,
                 p.embedding_resnet_dt);
    }
    fmt::print("  rcut          {} A (switch from rcut_smth {} A)\n", p.rcut, p.rcut_smth);
    fmt::print("  sel           {} (N_c = {})\n", fmt::join(p.sel, " "), p.nnei());
    if (p.type_embedded()) {
      fmt::print("  type embedding one-hot {} -> {}{} (tebd_input_mode {})\n", p.ntypes(),
                 fmt::join(p.type_embedding.neuron, " -> "), p.type_embedding.linear ? ", linear" : "",
                 p.tebd_input_mode);
      const auto inputs = p.stripped() ? 1 : 1 + p.type_input_dim();
      if (p.three_body_tebd()) {
        fmt::print(
            "  embedding net {} -> {} (one net for all neighbour pairs; smooth {}, concat_output_tebd {}; "
            "descriptor {} numbers)\n",
            inputs, fmt::join(p.embedding_neuron, " -> "), p.attention.smooth, p.attention.concat_output_tebd,
            p.descriptor_dim());
      } else {
        fmt::print(
            "  embedding net {} -> {}, axis_neuron {} (one net for all types; descriptor {} numbers)\n",
            inputs, fmt::join(p.embedding_neuron, " -> "), p.axis_neuron, p.descriptor_dim());
      }
      if (p.attention_descriptor()) {
        const auto& a = p.attention;
        fmt::print(
            "  attention     {} layers of width {}, attn_dotr {}, smooth_type_embedding {}, normalize {}, "
            "concat_output_tebd {}\n",
            a.layers, a.width, a.dotr, a.smooth, a.normalize, a.concat_output_tebd);
      }
    } else if (p.descriptor != "se_e2_a") {
      fmt::print("  embedding net 1 -> {} (descriptor {} numbers)\n", fmt::join(p.embedding_neuron, " -> "),
                 p.descriptor_dim());
    } else {
      fmt::print("  embedding net 1 -> {}, axis_neuron {} (descriptor {} numbers)\n",
                 fmt::join(p.embedding_neuron, " -> "), p.axis_neuron, p.descriptor_dim());
    }
  }
  fmt::print("fitting net     {} -> {} -> 1, resnet_dt {}{}\n", c.fitting_input_dim(),
             fmt::join(c.fitting_neuron, " -> "), c.fitting_resnet_dt,
             c.type_embedded() ? " (one net for all types, reading the descriptor and tebd_i)" : "");
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
  print_training_range(loaded.model->training_range(), c);
  print_compression(loaded.model);
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
