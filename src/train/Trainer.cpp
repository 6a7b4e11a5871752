// The training loop: Trainer's interface and run(), steps, validation, checkpoints and stops in order.
#include "src/train/Trainer.hpp"

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

#include "optim/Optimizers.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/core/Together.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/BatchSampler.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/CheckpointSpace.hpp"
#include "src/train/DataSetup.hpp"
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

// "frames 3, 7 of file.h5#/Si8": the frames of a batch as the data files number them.
std::string batch_text(const std::vector<FrameSubset>& parts, const BatchRef& ref) {
  const FrameSubset& part = parts[static_cast<std::size_t>(ref.system)];
  std::vector<std::int64_t> frames;
  for (const auto p : ref.frames) frames.push_back(part.frames[static_cast<std::size_t>(p)]);
  return fmt::format("frame{} {} of {}", frames.size() == 1 ? "" : "s", fmt::join(frames, ", "),
                     part.info().source);
}

// The first parameter of `model` with a non-finite value, or -1.
std::int64_t first_nonfinite_parameter(const DeepPot& model) {
  const auto params = model->parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!torch::isfinite(params[i].detach()).all().item<bool>()) return static_cast<std::int64_t>(i);
  return -1;
}

std::vector<double> flatten_cpu(const std::vector<torch::Tensor>& tensors) {
  std::vector<double> out;
  for (const auto& t : tensors) {
    const auto c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    out.insert(out.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  }
  return out;
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, const TrainerOptions& options, std::shared_ptr<Communicator> comm)
    : impl_(std::make_unique<Impl>(config, options, std::move(comm))) {
  impl_->setup();
}

Trainer::~Trainer() = default;

std::int64_t Trainer::step() const { return impl_->step; }

std::vector<double> Trainer::flat_parameters() const { return flatten_cpu(impl_->model->parameters()); }

std::int64_t Trainer::frames_read() const {
  std::int64_t n = 0;
  for (const auto& s : impl_->data.sources) n += s->frames_read();
  return n;
}

std::int64_t Trainer::covariance_bytes() const { return impl_->optimizer->covariance_bytes(); }

// One call of run(): the loop's state between steps (the learning curve, the progress bar, the result so
// far, the last checkpoint) and its parts, each a step of the loop as the log shows it.
struct Trainer::Run {
  explicit Run(Impl& impl);
  TrainResult loop();

 private:
  // Refuses a restart with nothing left to train; writes input.resolved.json, checks the space for the
  // checkpoints and opens the learning curve (rank 0); the log's first lines.
  void begin();
  // One training step on batch `ref`; a non-finite innovation or loss ends the run, naming the batch.
  ErrorMetrics step(const BatchRef& ref);
  // The display line after a step: the batch's errors on the new weights (unless the step measured them),
  // validation, learning curve and log.
  void display(ErrorMetrics trn, const BatchRef& ref);
  // A checkpoint at save_freq, at the end (with the final energy bias, calibration and model file) or at a
  // stop signal. `completed`: a journal checkpoint of this very step was completed after it; it stands for
  // this save unless the end of the run changes the model first.
  void save(bool last, bool stop, bool completed);
  // The model file, once: at the end before the last checkpoint (it is small and what the run is for, so a
  // checkpoint that fails then, a full disk say, loses nothing), or after a run paused early.
  void write_model_file();
  // After the loop: the optimizer's time summary, validation on every frame, the model file.
  void finish();

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m.run_start).count();
  }
  // "  ETA 12:34" on a display line: this run's time per step so far, validation included, times the steps
  // left; train.log has no progress bar.
  std::string eta() const;
  // A non-finite innovation, loss or prediction ends the run here, naming the step and the batch, before a
  // checkpoint or model could hold non-finite weights; the last checkpoint stays as it was.
  OptimError diverged(std::int64_t step, const std::string& what) const {
    return OptimError(
        fmt::format("training stopped at step {}: {}; last checkpoint: {}", step, what, last_checkpoint));
  }

  Impl& m;
  TrainResult result;
  std::unique_ptr<LearningCurve> lcurve;  // root only
  std::unique_ptr<ProgressBar> progress;
  std::int64_t first_step;
  std::string ckpt_path;
  std::string last_checkpoint;
  bool model_written = false;
};

Trainer::Run::Run(Impl& impl)
    : m(impl),
      first_step(impl.step),
      ckpt_path(impl.out(impl.cfg.save_ckpt)),
      last_checkpoint(impl.resumed_from().empty() ? std::string("none written") : impl.resumed_from()) {}

void Trainer::Run::begin() {
  if (!m.resumed_from().empty() && m.step >= m.cfg.numb_steps) {
    throw ConfigError(fmt::format(
        "checkpoint {} is at step {} and 'training.numb_steps' in {} is {}: nothing is left to train; set "
        "numb_steps above {} to continue the run (or use --init-model to start a new one from its weights)",
        m.resumed_from(), m.step, m.cfg.file, m.cfg.numb_steps, m.step));
  }
  const bool virial_columns = std::any_of(m.data.train.begin(), m.data.train.end(),
                                          [](const FrameSubset& s) { return s.info().has_virial; });
  m.together([&] {
    if (!m.root()) return;
    json resolved = m.cfg.to_json();
    resolved["optimizer"] = m.optimizer->settings();  // "auto" settings as the memory plan chose them
    write_text_atomically(m.out("input.resolved.json"), resolved.dump(2) + "\n");
    const std::int64_t weight_bytes =
        m.model->parameter_count() * static_cast<std::int64_t>(c10::elementSize(m.mcfg.precision));
    check_checkpoint_space(
        ckpt_path, checkpoint_bytes(m.optimizer->block_sizes(), m.optimizer->block_dtype(), weight_bytes),
        checkpoint_writes(m.step, m.cfg.numb_steps, m.cfg.save_freq));
    lcurve = std::make_unique<LearningCurve>(m.out(m.cfg.disp_file), m.opt.restart.empty() ? -1 : m.step,
                                             virial_columns, m.optimizer->status_name());
  });
  progress = std::make_unique<ProgressBar>(m.step, m.cfg.numb_steps, m.root() ? m.opt.progress : 0);
  m.log->info("training from step {} to {}", m.step, m.cfg.numb_steps);
  if (!m.data.valid.empty()) {
    const std::int64_t n = m.display_validation_frames();
    m.log->info(
        "display lines: \"val\" on {} validation frame{} each (validation_data.numb_btch batches, "
        "taken in turn), \"trn\" on the step's batch",
        n, n == 1 ? "" : "s");
  }
  if (m.cfg.enable_ema && !m.average) m.average = std::make_unique<WeightAverage>(m.model, m.cfg.ema_decay);
}

std::string Trainer::Run::eta() const {
  const std::int64_t done = m.step - first_step, left = m.cfg.numb_steps - m.step;
  if (done <= 0 || left <= 0) return std::string();
  return "  ETA " +
         ProgressBar::format_duration(elapsed() / static_cast<double>(done) * static_cast<double>(left));
}

ErrorMetrics Trainer::Run::step(const BatchRef& ref) {
  ErrorMetrics trn;
  const auto start = std::chrono::steady_clock::now();
  try {
    trn = m.train_step(ref);
  } catch (const OptimError& e) {
    throw diverged(m.step + 1, fmt::format("{} ({})", e.what(), batch_text(m.data.train, ref)));
  }
  if (m.optimizer->batch_errors() && !trn.finite())
    throw diverged(m.step + 1,
                   fmt::format("the loss is not finite: the model predicts non-finite values for {}",
                               batch_text(m.data.train, ref)));
  if (m.average) m.average->update(m.model);
  m.step_time += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++m.step;
  return trn;
}

void Trainer::Run::display(ErrorMetrics trn, const BatchRef& ref) {
  if (!m.optimizer->batch_errors()) {
    // Errors of the training batch on the weights after the update.
    const Batch b = m.local_batch(m.data.train, ref);
    trn = ErrorMetrics{};
    if (b.coord.size(0) > 0) trn.add(m.model->evaluate(b.coord, b.atype, b.nlist, b.shift), b);
  }
  auto packed = trn.pack();
  m.reduce(packed);
  trn.unpack(packed);
  if (!trn.finite())
    throw diverged(
        m.step, "after the update the model predicts non-finite values for " + batch_text(m.data.train, ref));
  const ErrorMetrics val = m.validate(false);
  if (!val.finite()) throw diverged(m.step, "the model predicts non-finite values for validation frames");
  result.validation = val;
  result.training = trn;
  const std::string status = m.optimizer->status_line(m.step);
  if (!m.root()) return;
  lcurve->add(m.step, val, trn, m.optimizer->status_value(m.step), m.wall_seconds(), m.step_seconds());
  progress->clear();
  // Without validation data the validation columns say so instead of showing nan.
  const auto val_e = val.e_count > 0 ? fmt::format("val {:.3e} ", val.rmse_e()) : std::string();
  const auto val_f = val.e_count > 0 ? fmt::format("val {:.3e} ", val.rmse_f()) : std::string();
  m.log->info("step {:>7}  rmse_e {}trn {:.3e} eV/atom  rmse_f {}trn {:.3e} eV/A  {}{}", m.step, val_e,
              trn.rmse_e(), val_f, trn.rmse_f(), status, eta());
}

void Trainer::Run::write_model_file() {
  if (!m.opt.write_model || model_written) return;
  m.together([&] {
    if (!m.root()) return;
    result.model = m.out("model.pt");
    save_model(result.model, m.model, m.provenance(), m.calibration);
    m.log->info("model written to {}", result.model);
    if (m.average) {
      // The averaged weights with the model's statistics and energy bias; the calibration of the
      // predicted uncertainty belongs to the weights the filter tracked, and stays out.
      const std::string path = m.out("model_ema.pt");
      m.average->with_average(m.model, [&] { save_model(path, m.model, m.provenance()); });
      result.model_average = path;
      m.log->info("model with the moving average of the weights (ema_decay {}) written to {}",
                  m.average->decay(), path);
    }
  });
  model_written = true;
}

void Trainer::Run::save(bool last, bool stop, bool completed) {
  if (const auto p = first_nonfinite_parameter(m.model); p >= 0)
    throw diverged(m.step, fmt::format("parameter tensor {} of the model holds non-finite values", p));
  // The last checkpoint and the model file carry the final energy bias and the calibration of the weights
  // they hold.
  const bool end = last && !stop && m.step == m.cfg.numb_steps;
  if (end) {
    m.change_energy_bias();
    m.calibrate_uncertainty();
    write_model_file();
  }
  if (!completed || end) m.write_checkpoint_now(ckpt_path, last || stop);
  result.checkpoint = ckpt_path;
  last_checkpoint = fmt::format("{} (step {})", ckpt_path, m.step);
}

void Trainer::Run::finish() {
  progress->finish();
  result.wall_seconds = elapsed();
  if (const std::string time = m.optimizer->time_summary(); !time.empty())
    m.log->info("{} steps on rank 0: {}", m.optimizer->name(), time);
  if (!result.interrupted && !m.data.valid.empty()) {
    // The displays sample numb_btch batches; the final figure covers every validation frame.
    const auto errors = [](const ErrorMetrics& v) {
      return fmt::format("rmse_e {:.3e} eV/atom, rmse_f {:.3e} eV/A{}", v.rmse_e(), v.rmse_f(),
                         v.has_virial() ? fmt::format(", rmse_v {:.3e} eV/atom", v.rmse_v()) : std::string());
    };
    result.validation = m.validate(true);
    m.log->info("validation on all {} frames: {}", result.validation.e_count, errors(result.validation));
    if (m.average) {
      m.average->with_average(m.model, [&] { result.validation_average = m.validate(true); });
      m.log->info("validation of the averaged weights (model_ema.pt): {}", errors(result.validation_average));
    }
  }
  result.steps = m.step;
  if (!result.interrupted) write_model_file();
}

TrainResult Trainer::Run::loop() {
  begin();
  const std::int64_t end = m.opt.pause_at > 0 ? std::min(m.opt.pause_at, m.cfg.numb_steps) : m.cfg.numb_steps;
  while (m.step < end) {
    const BatchRef ref = m.sampler->next();
    const ErrorMetrics trn = step(ref);
    const bool last = m.step == end;
    if (m.step % m.cfg.disp_freq == 0 || last || m.step == 1) display(trn, ref);
    progress->update(m.step, fmt::format("rmse_f {:.3e}", result.training.rmse_f()));
    const bool stop = m.comm->any(StopSignal::requested());
    const bool completed = m.complete_checkpoint();
    if (m.step % m.cfg.save_freq == 0 || last || stop) save(last, stop, completed);
    if (stop) {
      progress->clear();
      m.log->info("stopped by signal {} at step {}; checkpoint {} (continue with --restart)",
                  StopSignal::signal_number(), m.step, ckpt_path);
      result.interrupted = true;
      break;
    }
  }
  finish();
  return result;
}

TrainResult Trainer::run() {
  Impl& m = *impl_;
  // However the run ends, returning or throwing, the output folder is free for the next one.
  struct ReleaseFolder {
    Impl& m;
    ~ReleaseFolder() { m.output_lock.reset(); }
  } release{m};
  StopSignal stop_guard;
  m.run_start = std::chrono::steady_clock::now();
  TrainResult result = Run(m).loop();
  m.comm->barrier();
  return result;
}

}  // namespace deepkf
