// deepkf test -m MODEL -s SYSTEM... : prediction errors of a model on labelled data, per system and overall
// (energy per atom, force and virial RMSE and MAE), a per-frame results file and an SVG parity plot.
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <thread>

#include "src/cli/Commands.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/ErrorMetrics.hpp"
#include "src/train/SvgPlot.hpp"

namespace deepkf::cli {
namespace {

struct TestArgs {
  std::string model;
  std::vector<std::string> systems;
  std::string output = "test";
  int batch = 8;
  int threads = 0;
};

std::string metrics_row(const std::string& name, std::int64_t frames, const ErrorMetrics& m) {
  std::string row = fmt::format("{:<36} {:>7} {:>11.4e} {:>11.4e}", name, frames, m.rmse_e(), m.mae_e());
  row += m.has_force() ? fmt::format(" {:>11.4e} {:>11.4e}", m.rmse_f(), m.mae_f())
                       : fmt::format(" {:>11} {:>11}", "-", "-");
  row += m.has_virial() ? fmt::format(" {:>11.4e} {:>11.4e}", m.rmse_v(), m.mae_v())
                        : fmt::format(" {:>11} {:>11}", "-", "-");
  return row;
}

void run_test(const TestArgs& args) {
  torch::set_num_threads(
      args.threads > 0 ? args.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  LoadedModel loaded = load_model(args.model, torch::kCPU);
  const ModelConfig& config = loaded.config;
  const Dataset data = Dataset::load(args.systems, config.type_map);

  std::string frames_table = "# system\tframe\tnatoms\te_ref\te_pred\tde_per_atom\tf_rmse\tv_rmse_per_atom\n";
  std::vector<double> e_ref, e_pred, f_ref, f_pred;
  ErrorMetrics total;
  std::int64_t total_frames = 0;
  fmt::print("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "system", "frames", "rmse_e",
             "mae_e", "rmse_f", "mae_f", "rmse_v", "mae_v");
  fmt::print("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "", "", "eV/atom", "eV/atom", "eV/A",
             "eV/A", "eV/atom", "eV/atom");
  for (const auto& sys : data.systems) {
    ErrorMetrics m;
    for (std::int64_t begin = 0; begin < sys.nframes; begin += args.batch) {
      std::vector<std::int64_t> frames;
      for (std::int64_t f = begin; f < std::min(sys.nframes, begin + args.batch); ++f) frames.push_back(f);
      const Batch b = make_batch(sys, frames, config, torch::kCPU, config.precision);
      const ModelOutput out = loaded.model->evaluate(b.coord, b.atype, b.nlist, b.shift, false);
      m.add(out, b);
      const auto pe = out.energy.to(torch::kFloat64).contiguous();
      const auto re = b.energy.to(torch::kFloat64).contiguous();
      for (std::size_t k = 0; k < frames.size(); ++k) {
        const auto i = static_cast<std::int64_t>(k);
        const double ep = pe[i].item<double>(), er = re[i].item<double>();
        const double n = static_cast<double>(sys.natoms);
        e_ref.push_back(er / n);
        e_pred.push_back(ep / n);
        double frmse = std::nan(""), vrmse = std::nan("");
        if (b.has_force) {
          const auto df = out.force[i].to(torch::kFloat64) - b.force[i].to(torch::kFloat64);
          frmse = df.square().mean().sqrt().item<double>();
          const auto fr = b.force[i].to(torch::kFloat64).contiguous().reshape({-1});
          const auto fp = out.force[i].to(torch::kFloat64).contiguous().reshape({-1});
          f_ref.insert(f_ref.end(), fr.data_ptr<double>(), fr.data_ptr<double>() + fr.numel());
          f_pred.insert(f_pred.end(), fp.data_ptr<double>(), fp.data_ptr<double>() + fp.numel());
        }
        if (b.has_virial)
          vrmse = ((out.virial[i].to(torch::kFloat64) - b.virial[i].to(torch::kFloat64)) / n)
                      .square()
                      .mean()
                      .sqrt()
                      .item<double>();
        frames_table += fmt::format("{}\t{}\t{}\t{:.10g}\t{:.10g}\t{:.6e}\t{:.6e}\t{:.6e}\n", sys.source,
                                    frames[k], sys.natoms, er, ep, (ep - er) / n, frmse, vrmse);
      }
    }
    fmt::print("{}\n", metrics_row(sys.source, sys.nframes, m));
    total.merge(m);
    total_frames += sys.nframes;
  }
  fmt::print("{}\n", metrics_row("all systems", total_frames, total));

  const std::string table_path = args.output + ".frames.tsv";
  write_text_atomically(table_path, frames_table);
  PlotPanel energy{"energy per atom",
                   "reference (eV/atom)",
                   "prediction (eV/atom)",
                   false,
                   true,
                   {{fmt::format("RMSE {:.2e} eV/atom", total.rmse_e()), e_ref, e_pred, true, ""}}};
  std::vector<PlotPanel> panels = {energy};
  if (!f_ref.empty()) {
    panels.push_back({"force components",
                      "reference (eV/A)",
                      "prediction (eV/A)",
                      false,
                      true,
                      {{fmt::format("RMSE {:.2e} eV/A", total.rmse_f()), f_ref, f_pred, true, ""}}});
  }
  const std::string plot_path = args.output + ".parity.svg";
  write_text_atomically(plot_path, render_svg(panels));
  fmt::print("per-frame results {}\nparity plot       {}\n", table_path, plot_path);
}

}  // namespace

void add_test_command(CLI::App& app) {
  auto args = std::make_shared<TestArgs>();
  auto* cmd = app.add_subcommand("test", "Errors of a model on labelled data, per system and overall");
  cmd->add_option("-m,--model", args->model, "model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-s,--system", args->systems, "systems: npy folders, file.h5, file.h5#group")->required();
  cmd->add_option("-o,--output", args->output, "prefix of the output files")->capture_default_str();
  cmd->add_option("-b,--batch", args->batch, "frames evaluated together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", args->threads, "LibTorch threads (0: one per core)")->capture_default_str();
  cmd->callback([args] { run_test(*args); });
}

}  // namespace deepkf::cli
