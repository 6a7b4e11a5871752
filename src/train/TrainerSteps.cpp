// One training step, validation, checkpoints and the uncertainty calibration of a Trainer.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "optim/Optimizers.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"
#include "src/core/Together.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/BatchSampler.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/EnergyBiasRefit.hpp"
#include "src/train/LearningCurve.hpp"
#include "src/train/ProgressBar.hpp"
#include "src/train/StopSignal.hpp"
#include "src/train/TrainerImpl.hpp"
#include "src/train/TrainingDevice.hpp"
#include "src/train/TrainingLog.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::int64_t frame_count(const std::vector<FrameSubset>& parts) {
  std::int64_t n = 0;
  for (const auto& p : parts) n += p.nframes();
  return n;
}

// The part holding frame `index` of the parts' concatenation, and the frame's index within that part.
std::pair<int, std::int64_t> locate_frame(const std::vector<FrameSubset>& parts, std::int64_t index) {
  int s = 0;
  while (index >= parts[static_cast<std::size_t>(s)].nframes())
    index -= parts[static_cast<std::size_t>(s++)].nframes();
  return {s, index};
}

}  // namespace

Batch Trainer::Impl::local_batch(const std::vector<FrameSubset>& parts, const BatchRef& ref) const {
  const auto [begin, end] = my_share(ref.frames.size());
  std::vector<std::int64_t> mine(ref.frames.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ref.frames.begin() + static_cast<std::ptrdiff_t>(end));
  // Only this rank's frames are read from the file.
  const System frames = parts[static_cast<std::size_t>(ref.system)].read(mine);
  std::vector<std::int64_t> all(mine.size());
  std::iota(all.begin(), all.end(), std::int64_t{0});
  return make_batch(frames, all, mcfg, device, mcfg.precision);
}

ErrorMetrics Trainer::Impl::train_step(const BatchRef& ref) {
  const Batch b = local_batch(data.train, ref);
  // Which labels exist is a property of the system, not of this rank's share (which may be empty).
  const SystemInfo& info = data.train[static_cast<std::size_t>(ref.system)].info();
  StepInput in{b, info, static_cast<std::int64_t>(ref.frames.size()),
               static_cast<std::int64_t>(my_share(ref.frames.size()).first), step};
  for (const BatchRef& r : replay_refs(optimizer->replay_frames())) {
    in.replay.push_back(local_batch(data.train, r));
    in.replay_frames += static_cast<std::int64_t>(r.frames.size());
  }
  return optimizer->take(in);
}

std::vector<BatchRef> Trainer::Impl::replay_refs(int count) const {
  if (count <= 0) return {};
  const std::int64_t total = frame_count(data.train);
  // A function of the seed and the step only: every rank, and a restarted run, draws the same frames.
  std::mt19937_64 gen(static_cast<std::uint64_t>(cfg.seed) * 0x9E3779B97F4A7C15ULL +
                      static_cast<std::uint64_t>(step));
  std::uniform_int_distribution<std::int64_t> pick(0, total - 1);
  std::vector<BatchRef> refs;
  for (int i = 0; i < count; ++i) {
    const auto where = locate_frame(data.train, pick(gen));
    const int s = where.first;
    auto it = std::find_if(refs.begin(), refs.end(), [s](const BatchRef& r) { return r.system == s; });
    if (it == refs.end()) it = refs.insert(refs.end(), BatchRef{s, {}});
    it->frames.push_back(where.second);
  }
  return refs;
}

std::int64_t Trainer::Impl::display_validation_frames() const {
  const int per_batch = cfg.validation_data.batch_rule == DataSection::BatchRule::kFixed
                            ? std::max(1, cfg.validation_data.batch_size)
                            : 1;
  return std::min<std::int64_t>(frame_count(data.valid),
                                static_cast<std::int64_t>(cfg.validation_data.numb_btch) * per_batch);
}

ErrorMetrics Trainer::Impl::validate(bool all_frames) {
  ErrorMetrics metrics;
  if (data.valid.empty()) return metrics;
  const std::int64_t total = frame_count(data.valid);
  // numb_btch batches per display, cycling through all validation frames in order.
  const std::int64_t wanted = all_frames ? total : display_validation_frames();
  std::int64_t done = 0;
  std::int64_t cursor = all_frames ? 0 : valid_cursor;
  while (done < wanted) {
    const auto [s, c] = locate_frame(data.valid, cursor % total);
    const auto& sys = data.valid[static_cast<std::size_t>(s)];
    const std::int64_t n =
        std::min({static_cast<std::int64_t>(data.valid_batch_size[static_cast<std::size_t>(s)]),
                  sys.nframes() - c, wanted - done});
    BatchRef ref{static_cast<int>(s), {}};
    for (std::int64_t f = c; f < c + n; ++f) ref.frames.push_back(f);
    const Batch b = local_batch(data.valid, ref);
    if (b.coord.size(0) > 0) metrics.add(model->evaluate(b.coord, b.atype, b.nlist, b.shift), b);
    done += n;
    cursor += n;
  }
  if (!all_frames) valid_cursor = cursor % total;
  auto packed = metrics.pack();
  reduce(packed);
  metrics.unpack(packed);
  return metrics;
}

json Trainer::Impl::provenance() const {
  json p;
  p["program"] = "deepkf 0.1.0";
  p["training_data"] = cfg.training_data.systems;
  p["validation_data"] = cfg.validation_data.systems;
  p["input"] = cfg.file;
  p["steps"] = step;
  p["optimizer"] = optimizer->settings();
  p["ranks"] = comm->size();
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p["date"] = date;
  return p;
}

json Trainer::Impl::checkpoint_meta() const {
  json meta;
  meta["step"] = step;
  meta["epoch"] = sampler->epoch();
  meta["position"] = sampler->position();
  meta["valid_cursor"] = valid_cursor;
  meta["optimizer"] = cfg.optimizer;
  meta["optimizer_settings"] = optimizer->settings();
  meta["config"] = cfg.to_json();
  meta["model"] = mcfg.to_json();
  meta["training_range"] = model->training_range().to_json();
  meta["provenance"] = provenance();
  meta["ranks"] = comm->size();
  meta["wall_seconds"] = wall_seconds();  // a restart's learning curve goes on from it
  meta["step_seconds"] = step_seconds();
  if (!calibration.is_null()) meta["uncertainty_calibration"] = calibration;
  return meta;
}

// A journal checkpoint's line: when it began, and that the covariance was written while training went on.
static std::string journal_how(const CheckpointSaver::Report& report) {
  return fmt::format(
      "; begun at step {}, the covariance written from the live blocks in {:.1f} s while "
      "training went on",
      report.begun_at, report.seconds);
}

bool Trainer::Impl::complete_checkpoint() {
  const auto report = saver->poll(
      model, [&] { return checkpoint_meta(); }, average.get());
  if (report && root())
    log->info("{}", checkpoint_written(out(cfg.save_ckpt), step, report->bytes, report->waited,
                                       journal_how(*report)));
  return report.has_value();
}

void Trainer::Impl::write_checkpoint_now(const std::string& path, bool last) {
  const auto report =
      saver->save(path, step, model, checkpoint_meta(), *optimizer, *comm, average.get(), last);
  // Training waits while the checkpoint is written (for RLEKF, the whole covariance, unless a thread writes
  // it): the log says how long.
  if (!root()) return;
  if (report.begun_at >= 0) {
    log->info("{}", checkpoint_written(path, step, report.bytes, report.waited, journal_how(report)));
    return;
  }
  if (report.journal) {
    log->info(
        "checkpoint {} at step {}: the covariance is written from the live blocks while training goes "
        "on ({:.1f} s; its changes kept meanwhile), the checkpoint completes at a later step",
        path, step, report.waited);
    return;
  }
  if (report.background) {
    log->info("checkpoint {} at step {}: covariance copied in {:.1f} s, written in the background", path,
              step, report.waited);
    return;
  }
  log->info("{}", checkpoint_written(path, step, report.bytes, report.waited, ""));
}

std::string Trainer::Impl::checkpoint_written(const std::string& path, std::int64_t step, std::int64_t bytes,
                                              double seconds, const std::string& how) {
  return fmt::format("checkpoint {} written at step {} ({}, {:.1f} s{})", path, step,
                     bytes < 0 ? std::string("size unknown") : format_bytes(bytes), seconds, how);
}

void Trainer::Impl::change_energy_bias() {
  if (!cfg.change_bias_after_training) return;
  const auto start = std::chrono::steady_clock::now();
  const BiasRefit fit = refit_energy_bias(model, {data.train, data.batch_size},
                                          {data.valid, data.valid_batch_size}, device, *comm);
  for (const auto& w : fit.warnings) log->warn("{}", w);
  if (fit.frames == 0) return;
  const std::string shifts = fit.shift_text(mcfg.type_map);
  const std::string held_out = fit.valid_frames == 0
                                   ? std::string()
                                   : fmt::format(", on the {} validation frames {:.3e} -> {:.3e}",
                                                 fit.valid_frames, fit.valid_before, fit.valid_after);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (fit.applied) {
    log->info(
        "energy bias changed after training (change_bias_after_training) by {} eV: rmse_e on the {} "
        "training frames {:.3e} -> {:.3e} eV/atom{} ({:.1f} s)",
        shifts, fit.frames, fit.rmse_before, fit.rmse_after, held_out, seconds);
  } else {
    log->info(
        "energy bias kept after training (change_bias_after_training): the shift fitted on the training "
        "frames, {} eV, would raise the validation error (rmse_e on the {} training frames {:.3e} -> "
        "{:.3e} eV/atom{}) ({:.1f} s)",
        shifts, fit.frames, fit.rmse_before, fit.rmse_after, held_out, seconds);
  }
}

void Trainer::Impl::calibrate_uncertainty() {
  calibration = json();  // a calibration restored with the checkpoint belongs to earlier weights
  KalmanFilter* filter = optimizer->weight_covariance();
  const std::int64_t frames = cfg.calibration_frames_for(step);
  if (filter == nullptr || data.valid.empty()) return;
  if (frames == 0) {
    if (cfg.calibration_frames == TrainConfig::kCalibrationAuto) {
      log->info(
          "uncertainty calibration skipped: calibration_frames \"auto\" takes one frame per 10 steps, and "
          "this run has {}; set calibration_frames to calibrate anyway",
          step);
    }
    return;
  }
  // "auto" stops taking new frames after a tenth of the training's wall time (each rank by its own clock).
  const bool automatic = cfg.calibration_frames == TrainConfig::kCalibrationAuto;
  const double budget = automatic ? TrainConfig::kCalibrationTimeShare * wall_seconds() : 0.0;
  const auto start = std::chrono::steady_clock::now();
  const auto fitted = calibrate(model, *filter, data.valid, frames, cfg.seed,
                                fmt::format("the validation data at step {}", step), *comm, budget);
  calibration = fitted.to_json();
  log->info(
      "uncertainty calibration on {}: s_e {:.4g}, s_f {:.4g} ({:.1f} s{})", fitted.fitted_on, fitted.energy,
      fitted.force, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      automatic ? fmt::format("; calibration_frames \"auto\": up to {} frames, new ones until {:.0f} s, "
                              "a tenth of the training time",
                              frames, budget)
                : std::string());
}

}  // namespace deepkf
