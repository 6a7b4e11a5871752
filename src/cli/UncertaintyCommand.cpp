// deepkf uncertainty [-c CKPT] [-m MODEL -m MODEL ...] -s DATA... [-o PREFIX]: the predicted uncertainty of
// each frame's energy and forces from the RLEKF covariance of a checkpoint's weights, and/or the deviation of
// an ensemble of model files as pair_style deepkf computes it; with labels, the actual errors and how well
// each uncertainty ranks the frames by them (docs/uncertainty.md). DATA may be LAMMPS dumps (--type-map).
// Under mpirun the frames and the covariance blocks are split over the ranks.
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "src/cli/Commands.hpp"
#include "src/cli/MpiSession.hpp"
#include "src/cli/Threads.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/core/Together.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/FrameInputs.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/CheckpointCovariance.hpp"
#include "src/uncertainty/EnsembleDeviation.hpp"
#include "src/uncertainty/KalmanUncertainty.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"
#include "src/uncertainty/UncertaintyTable.hpp"

namespace deepkf::cli {
namespace {

struct UncertaintyArgs {
  std::string checkpoint;
  std::vector<std::string> models;
  std::vector<std::string> systems;
  std::vector<std::string> calibrate_on;
  std::vector<std::string> type_map;  // elements of LAMMPS types 1, 2, ... for dumps
  std::string output = "uncertainty";
  std::string force_atoms = "8";
  std::uint64_t seed = 1;
  double relative = -1.0;
  int threads = 0;
};

std::int64_t parse_force_atoms(const std::string& text) {
  if (text == "all") return 0;
  try {
    std::size_t used = 0;
    const long long n = std::stoll(text, &used);
    if (used == text.size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw ConfigError("--force-atoms is '" + text + "': give a number of atoms (at least 1) or 'all'");
}

// The calibration to apply, and one line saying where it comes from.
std::pair<UncertaintyCalibration, std::string> choose_calibration(
    const UncertaintyArgs& args, const LoadedCheckpoint& ckpt, KalmanFilter& filter,
    const std::vector<std::string>& types, const UncertaintyOptions& options, Communicator& comm) {
  if (!args.calibrate_on.empty()) {
    const FrameInputs labelled =
        open_frames(args.calibrate_on, args.type_map, types, "the checkpoint's model");
    const auto scored = score_frames(ckpt.model, filter, labelled.sets, options, comm);
    auto c = UncertaintyCalibration::fit(scored.frames, fmt::format("{} frames of {}", scored.frames.size(),
                                                                    fmt::join(args.calibrate_on, " ")));
    return {c, "calibrated on the frames of --calibrate-on (" + c.fitted_on + ")"};
  }
  if (ckpt.meta.contains("uncertainty_calibration")) {
    auto c = UncertaintyCalibration::from_json(ckpt.meta["uncertainty_calibration"],
                                               "checkpoint " + args.checkpoint);
    return {c, "calibrated at the end of training on " + c.fitted_on};
  }
  return {UncertaintyCalibration{}, ""};
}

std::string calibration_report(const UncertaintyCalibration& c, const std::string& origin) {
  if (c.has_energy() || c.has_force()) {
    return fmt::format(
        "sigma {}: s_e {:.4g} ({} energies), s_f {:.4g} ({} force components){}\n", origin, c.energy,
        c.energy_samples, c.force, c.force_samples,
        c.has_force() && c.has_energy() ? "" : "; a quantity without a factor is uncalibrated");
  }
  return "sigma is NOT calibrated (the checkpoint holds no calibration: trained without validation data, "
         "with "
         "calibration_frames 0, or by an older deepkf): the sigma columns are sqrt(h^T P h) in the filter's "
         "units, not eV/atom and eV/A; rank correlations do not depend on the scale; --calibrate-on DATA "
         "fits the "
         "factors on labelled frames\n";
}

void check_arguments(const UncertaintyArgs& args) {
  if (args.checkpoint.empty() && args.models.empty())
    throw ConfigError(
        "give a checkpoint (-c, for the Kalman uncertainty) and/or model files (-m, two or more, for "
        "an ensemble's deviation)");
  if (!args.calibrate_on.empty() && args.checkpoint.empty())
    throw ConfigError("--calibrate-on calibrates the Kalman uncertainty of a checkpoint: give one with -c");
  if (args.models.size() == 1)
    throw ConfigError("one model file given with -m: an ensemble's deviation needs at least two");
}

// One row per frame of every set, in order, with where the frame comes from.
std::vector<UncertaintyRow> frame_rows(const FrameInputs& frames) {
  std::vector<UncertaintyRow> rows;
  for (std::size_t s = 0; s < frames.sets.size(); ++s) {
    for (std::size_t f = 0; f < frames.sets[s].frames.size(); ++f) {
      UncertaintyRow r;
      r.system = frames.sets[s].info().source;
      r.frame = static_cast<std::int64_t>(f);
      r.timestep = frames.timesteps[s].empty() ? -1 : frames.timesteps[s][f];
      r.natoms = frames.sets[s].info().natoms;
      rows.push_back(r);
    }
  }
  return rows;
}

// The report's lines on the Kalman sigma, and whether the force sigma is in eV/A (calibrated).
struct KalmanReport {
  std::string lines;
  bool calibrated = false;
};

// The Kalman sigma of every row (and the errors of the checkpoint's model). Collective.
KalmanReport kalman_columns(const UncertaintyArgs& args, const LoadedCheckpoint& ckpt, KalmanFilter& filter,
                            const std::vector<std::string>& types, const UncertaintyOptions& options,
                            const FrameInputs& frames, std::vector<UncertaintyRow>& rows,
                            Communicator& comm) {
  const auto [calibration, origin_line] = choose_calibration(args, ckpt, filter, types, options, comm);
  const auto scored = score_frames(ckpt.model, filter, frames.sets, options, comm);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const FrameScore& score = scored.frames[k];
    const FrameSigma sigma = frame_sigma(score, calibration);
    rows[k].sigma_e = sigma.sigma_e;
    rows[k].sigma_f_max = sigma.sigma_f_max;
    rows[k].sigma_f_mean = sigma.sigma_f_mean;
    rows[k].sigma_f_rms = sigma.sigma_f_rms;
    rows[k].err_e = score.err_e;
    rows[k].err_f_rmse = score.err_f_rmse;
    rows[k].err_f_max = score.err_f_max;
  }
  std::string report = calibration_report(calibration, origin_line);
  const auto [r_e, r_f] = error_to_sigma_ratio(scored.frames, calibration);
  if (std::isfinite(r_e) || std::isfinite(r_f))
    report += fmt::format(
        "rms error / rms sigma on these frames (1: sigma has the errors' level): energy {:.3g}, "
        "scored force components {:.3g}\n",
        r_e, r_f);
  const auto& c = scored.cost;
  report += fmt::format(
      "cost on rank 0: {} frames, {} backward passes ({:.1f} ms each), {} passes over P ({:.2f} s); {:.3f} s "
      "per frame\n",
      c.frames, c.backward_passes, 1e3 * c.gradient_seconds / std::max<double>(1.0, c.backward_passes),
      c.covariance_passes, c.covariance_seconds,
      (c.gradient_seconds + c.covariance_seconds) / std::max<double>(1.0, c.frames));
  return {report, calibration.has_force()};
}

// The ensemble's deviation of every row (and, without a checkpoint, the first model's errors); returns the
// report's line.
std::string ensemble_columns(const Ensemble& models, const FrameInputs& frames, double relative, bool kalman,
                             std::vector<UncertaintyRow>& rows) {
  const auto start = std::chrono::steady_clock::now();
  const auto ensemble = ensemble_deviation(models, frames.sets, DeviationOptions{relative});
  for (std::size_t k = 0; k < rows.size(); ++k) {
    rows[k].deviation = ensemble[k].deviation;
    if (kalman) continue;  // the errors are those of the checkpoint's model
    rows[k].err_e = ensemble[k].errors.energy;
    rows[k].err_f_rmse = ensemble[k].errors.force_rmse;
    rows[k].err_f_max = ensemble[k].errors.force_max;
  }
  return fmt::format("ensemble of {} models: {:.2f} s\n", models.size(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void run_uncertainty(const UncertaintyArgs& args, const std::shared_ptr<Communicator>& comm) {
  set_torch_threads(args.threads);
  check_arguments(args);
  UncertaintyOptions options;
  options.force_atoms = parse_force_atoms(args.force_atoms);
  options.seed = args.seed;
  const bool root = comm->rank() == 0;

  LoadedCheckpoint ckpt;
  std::unique_ptr<KalmanFilter> filter;
  Ensemble models{std::vector<Potential>{}};
  together(*comm, [&] {
    if (!args.checkpoint.empty()) ckpt = read_checkpoint(args.checkpoint, torch::kCPU);
    models = Ensemble::load(args.models);
  });
  const bool kalman = !args.checkpoint.empty();
  if (kalman) together(*comm, [&] { filter = checkpoint_covariance(ckpt, args.checkpoint, comm); });
  const auto& types = kalman ? ckpt.model->config().type_map : models[0].config().type_map;
  const std::string origin = kalman ? "the type map of checkpoint " + args.checkpoint
                                    : "the type map of model file " + args.models.front();
  FrameInputs frames;
  together(*comm, [&] { frames = open_frames(args.systems, args.type_map, types, origin); });

  std::string report;
  std::vector<UncertaintyRow> rows = frame_rows(frames);
  UncertaintyColumns columns;
  bool calibrated = false;  // the force sigma is in eV/A
  if (kalman) {
    const auto k = kalman_columns(args, ckpt, *filter, types, options, frames, rows, *comm);
    report += k.lines;
    calibrated = k.calibrated;
    columns.kalman = true;
  }
  if (models.size() > 0 && root) {
    report += ensemble_columns(models, frames, args.relative, kalman, rows);
    columns.ensemble = true;
  }
  if (!root) return;
  for (const auto& r : rows)
    columns.errors = columns.errors || std::isfinite(r.err_e) || std::isfinite(r.err_f_rmse);

  fmt::print("{} frames in {} systems; errors of {}\n", rows.size(), frames.sets.size(),
             !columns.errors ? "none (no labels)"
             : kalman        ? "the checkpoint's model"
                             : "the first model file");
  fmt::print("{}", report);
  const std::string table_path = args.output + ".frames.tsv";
  write_text_atomically(table_path, uncertainty_table(rows, columns));
  fmt::print("{}", rank_summary(rows, columns));
  fmt::print("per-frame table {}\n", table_path);
  if (columns.errors) {
    const std::string plot_path = args.output + ".sigma.svg";
    write_text_atomically(
        plot_path, uncertainty_svg(rows, columns, !kalman || calibrated ? "" : "; sigma uncalibrated"));
    fmt::print("plot            {}\n", plot_path);
  }
}

}  // namespace

void add_uncertainty_command(CLI::App& app) {
  auto args = std::make_shared<UncertaintyArgs>();
  auto* cmd = app.add_subcommand(
      "uncertainty",
      "Predicted uncertainty of each frame: Kalman covariance of a checkpoint, ensemble deviation");
  cmd->add_option("-c,--checkpoint", args->checkpoint, "RLEKF checkpoint: sigma from its covariance")
      ->check(CLI::ExistingFile);
  cmd->add_option("-m,--model", args->models, "model files of an ensemble (two or more): model_devi columns")
      ->check(CLI::ExistingFile);
  cmd->add_option("-s,--system", args->systems,
                  "frames: npy folders, file.h5, file.h5#group, DeePMD-kit LMDB databases (*.lmdb), extended "
                  "XYZ, LAMMPS text dumps")
      ->required();
  cmd->add_option("-o,--output", args->output, "prefix of the output files")->capture_default_str();
  cmd->add_option("--type-map", args->type_map,
                  "element of LAMMPS types 1, 2, ... for dumps without 'element'");
  cmd->add_option("--force-atoms", args->force_atoms,
                  "atoms whose force components are scored per frame (3 backward passes each), or 'all'")
      ->capture_default_str();
  cmd->add_option("--calibrate-on", args->calibrate_on,
                  "labelled frames to fit the calibration on (instead of the checkpoint's)");
  cmd->add_option("--seed", args->seed, "seed of the scored atoms")->capture_default_str();
  cmd->add_option(
         "--relative", args->relative,
         "ensemble force deviation relative to |<F>| + this level (eV/A), as the plugin's 'relative'")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", args->threads, "LibTorch threads (0: one per core)")->capture_default_str();
  cmd->callback([args] {
    run_with_mpi([&](std::shared_ptr<Communicator> comm) {
      run_uncertainty(*args, comm);
      return 0;
    });
  });
}

}  // namespace deepkf::cli
