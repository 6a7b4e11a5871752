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

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/core/Together.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/BatchSampler.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/LearningCurve.hpp"
#include "src/train/Optimizers.hpp"
#include "src/train/ProgressBar.hpp"
#include "src/train/StopSignal.hpp"
#include "src/train/TrainingDevice.hpp"
#include "src/train/TrainingLog.hpp"
#include "src/train/UncertaintyCalibration.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

struct Trainer::Impl {
  TrainConfig cfg;
  TrainerOptions opt;
  std::shared_ptr<Communicator> comm;
  torch::Device device{torch::kCPU};
  ModelConfig mcfg;
  DeepPot model{nullptr};
  // Frames are read from the files when a batch needs them; only shapes and types stay in memory.
  TrainingData data;
  std::unique_ptr<BatchSampler> sampler;
  std::unique_ptr<TrainingStep> optimizer;  // RLEKF or Adam, one step per batch
  std::int64_t step = 0;
  std::int64_t valid_cursor = 0;  // next validation (system, frame) position, cycles through all frames
  std::shared_ptr<spdlog::logger> log;
  double wall_before = 0.0;  // training seconds of earlier runs (restarts)
  json calibration;          // of the predicted uncertainty (docs/uncertainty.md), null until fitted

  Impl(const TrainConfig& c, const TrainerOptions& o, std::shared_ptr<Communicator> cm)
      : cfg(c), opt(o), comm(std::move(cm)) {}

  bool root() const { return comm->rank() == 0; }
  std::string out(const std::string& name) const { return (fs::path(opt.output_dir) / name).string(); }

  void setup();
  void setup_threads_and_device();
  // `restored`: the checkpoint's optimizer settings when restoring (StepResources::restored).
  void build_optimizer(const json& restored = json());
  // same_data: --restart (the data order goes on from the checkpoint's position); otherwise
  // --continue (the input's data, which may differ, from the start of a new order).
  void restore(const std::string& path, bool same_data);
  // The checkpoint the run started from (--restart or --continue), or "".
  const std::string& resumed_from() const { return opt.restart.empty() ? opt.continue_from : opt.restart; }
  // Lets the optimizer look at the run's first batches before the first step (RLEKF's automatic p0).
  void prepare_optimizer();

  // This rank's share [begin, end) of a global batch of n frames.
  std::pair<std::size_t, std::size_t> my_share(std::size_t n) const { return rank_share(n, *comm); }
  Batch local_batch(const std::vector<FrameSubset>& parts, const BatchRef& ref) const;
  void reduce(std::vector<double>& values) const {
    if (comm->size() > 1) comm->allreduce_sum(values.data(), values.size());
  }
  // Runs f on every rank; if it fails on any, every rank throws (src/core/Together.hpp).
  template <typename F>
  void together(F&& f) {
    deepkf::together(*comm, std::forward<F>(f));
  }

  ErrorMetrics train_step(const BatchRef& ref);
  ErrorMetrics validate(bool all_frames);
  void write_checkpoint_now(const std::string& path);
  // Fits the uncertainty calibration on validation frames (RLEKF runs with validation data). Collective.
  void calibrate_uncertainty();
  json provenance() const;
};

// ----------------------------------------------------------------------------------------------- set-up

void Trainer::Impl::setup_threads_and_device() {
  const int threads = training_threads(cfg, *comm);
  torch::set_num_threads(threads);
  device = training_device(cfg, *comm);
  log->info("ranks {}, threads per rank {}, device {}", comm->size(), threads, device.str());
}

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

void Trainer::Impl::build_optimizer(const json& restored) {
  StepResources res = step_resources(device, *comm, data, mcfg);
  res.restored = restored;
  optimizer = make_training_step(cfg, model, comm, res);
  log->info("{}", optimizer->describe());
}

void Trainer::Impl::setup() {
  log = open_training_log(*comm, opt.output_dir, /*append=*/!opt.restart.empty());
  setup_threads_and_device();
  for (const auto& key : cfg.ignored_keys) log->info("input key {} has no effect in deepkf", key);
  if (!cfg.unused_keys.empty()) {
    log->info("input keys of another optimizer, unused with {}: {}", cfg.optimizer,
              fmt::join(cfg.unused_keys, ", "));
  }
  data = open_training_data(cfg, *comm, *log);
  std::vector<std::int64_t> nframes;
  for (const auto& s : data.train) nframes.push_back(s.nframes());
  sampler = std::make_unique<BatchSampler>(nframes, data.batch_size, cfg.seed, data.repeat);

  if (!opt.restart.empty() && !opt.continue_from.empty())
    throw ConfigError("--restart and --continue both name a checkpoint: give one");
  if (!opt.restart.empty() || !opt.continue_from.empty()) {
    if (!opt.init_model.empty())
      throw ConfigError(
          "--init-model starts from a model's weights and cannot be combined with a checkpoint");
    restore(resumed_from(), /*same_data=*/!opt.restart.empty());
    return;
  }
  if (!opt.init_model.empty()) {
    together([&] {
      auto loaded = load_model(opt.init_model, torch::kCPU);
      if (loaded.model->compressed()) {
        throw ConfigError("--init-model " + opt.init_model +
                          " is a compressed model (deepkf compress): training continues on an uncompressed "
                          "model; give the model file it was compressed from");
      }
      mcfg = loaded.config;
      model = loaded.model;
    });
    log->info("starting from model {} ({} parameters)", opt.init_model, model->parameter_count());
  } else {
    mcfg = ModelConfig::from_json(cfg.model, cfg.file);
    resolve_sel(mcfg, data.train, *comm, *log);
    mcfg.validate();
    model = DeepPot(mcfg);
  }
  model->to(device);
  // The optimizer (and its memory plan) before the statistics read the data: a run that cannot fit stops
  // at once.
  build_optimizer();
  if (opt.init_model.empty()) {
    set_statistics(model, mcfg, data.train, *comm, *log);
  } else {
    record_training_range(model, mcfg, data.train, *comm, *log);
  }
  prepare_optimizer();
}

void Trainer::Impl::prepare_optimizer() {
  // The first batches the run will take: a copy of the sampler draws them, the sampler itself stays.
  constexpr std::int64_t kBatches = 8;
  BatchSampler ahead = *sampler;
  const auto n = std::min(kBatches, ahead.batches_per_epoch());
  std::vector<Batch> batches;
  batches.reserve(static_cast<std::size_t>(n));  // `first` refers to them: no reallocation
  std::vector<StepInput> first;
  for (std::int64_t i = 0; i < n; ++i) {
    const BatchRef ref = ahead.next();
    batches.push_back(local_batch(data.train, ref));
    first.push_back({batches.back(), data.train[static_cast<std::size_t>(ref.system)].info(),
                     static_cast<std::int64_t>(ref.frames.size()),
                     static_cast<std::int64_t>(my_share(ref.frames.size()).first), i});
  }
  const std::string line = optimizer->prepare(first);
  if (!line.empty()) log->info("{}", line);
}

void Trainer::Impl::restore(const std::string& path, bool same_data) {
  // Every rank reads the checkpoint: its model, and the covariance blocks this rank owns.
  LoadedCheckpoint ckpt;
  together([&] { ckpt = read_checkpoint(path, device); });
  mcfg = ckpt.model->config();
  model = ckpt.model;
  // The run continues the checkpoint's model; an input that describes another one is a mistake.
  const auto changed = ModelConfig::from_json(cfg.model, cfg.file).differences(mcfg);
  if (!changed.empty()) {
    throw ConfigError("the model of " + cfg.file + " differs from that of checkpoint '" + path +
                      "' (input vs checkpoint: " + fmt::format("{}", fmt::join(changed, "; ")) +
                      "); --restart continues the checkpoint's model: give its model section, or start a new "
                      "run from its weights with --init-model");
  }
  build_optimizer(ckpt.meta.value("optimizer_settings", json::object()));
  // Checkpoints of earlier versions name RLEKF by DeePMD-kit's "LKF": the input's names apply.
  const std::string written =
      optimizer_name(ckpt.meta.value("optimizer", std::string("?")), "optimizer", path);
  if (written != cfg.optimizer) {
    throw ConfigError("checkpoint '" + path + "' was written by the " + written + " optimizer, but " +
                      cfg.file + " asks for " + cfg.optimizer);
  }
  // Each rank reads its own covariance blocks from the file.
  together([&] { optimizer->load(ckpt.optimizer, ckpt.covariance_block); });
  step = ckpt.meta.at("step").get<std::int64_t>();
  wall_before = ckpt.meta.value("wall_seconds", 0.0);
  calibration = ckpt.meta.value("uncertainty_calibration", json());
  if (!same_data) {
    // The checkpoint's data position refers to its own data: the new data's order starts at epoch 0.
    log->info("continuing from {} at step {} (weights and optimizer state) on the data of {}", path, step,
              cfg.file);
    return;
  }
  sampler->seek(ckpt.meta.at("epoch").get<std::int64_t>(), ckpt.meta.at("position").get<std::int64_t>());
  valid_cursor = ckpt.meta.value("valid_cursor", std::int64_t{0});
  log->info("restarted from {} at step {}", path, step);
}

// ----------------------------------------------------------------------------------------------- steps

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
  const StepInput in{b, info, static_cast<std::int64_t>(ref.frames.size()),
                     static_cast<std::int64_t>(my_share(ref.frames.size()).first), step};
  return optimizer->take(in);
}

ErrorMetrics Trainer::Impl::validate(bool all_frames) {
  ErrorMetrics metrics;
  if (data.valid.empty()) return metrics;
  std::int64_t total = 0;
  for (const auto& s : data.valid) total += s.nframes();
  // numb_btch batches per display, cycling through all validation frames in order.
  const std::int64_t wanted =
      all_frames
          ? total
          : std::min<std::int64_t>(
                total, static_cast<std::int64_t>(cfg.validation_data.numb_btch) *
                           std::max(1, cfg.validation_data.batch_auto ? 1 : cfg.validation_data.batch_size));
  std::int64_t done = 0;
  std::int64_t cursor = all_frames ? 0 : valid_cursor;
  while (done < wanted) {
    // Locate the system holding frame number `cursor` of the concatenated validation set.
    std::int64_t c = cursor % total, s = 0;
    while (c >= data.valid[static_cast<std::size_t>(s)].nframes())
      c -= data.valid[static_cast<std::size_t>(s++)].nframes();
    const auto& sys = data.valid[static_cast<std::size_t>(s)];
    const std::int64_t n =
        std::min({static_cast<std::int64_t>(data.valid_batch_size[static_cast<std::size_t>(s)]),
                  sys.nframes() - c, wanted - done});
    BatchRef ref{static_cast<int>(s), {}};
    for (std::int64_t f = c; f < c + n; ++f) ref.frames.push_back(f);
    const Batch b = local_batch(data.valid, ref);
    if (b.coord.size(0) > 0) metrics.add(model->evaluate(b.coord, b.atype, b.nlist, b.shift, false), b);
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

void Trainer::Impl::write_checkpoint_now(const std::string& path) {
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
  if (!calibration.is_null()) meta["uncertainty_calibration"] = calibration;
  write_training_checkpoint(path, model, meta, *optimizer, *comm);
}

void Trainer::Impl::calibrate_uncertainty() {
  calibration = json();  // a calibration restored with the checkpoint belongs to earlier weights
  KalmanFilter* filter = optimizer->kalman_filter();
  const std::int64_t frames = cfg.calibration_frames_for(step);
  if (filter == nullptr || data.valid.empty() || frames == 0) return;
  const auto start = std::chrono::steady_clock::now();
  const auto fitted = calibrate(model, *filter, data.valid, frames, cfg.seed,
                                fmt::format("the validation data at step {}", step), *comm);
  calibration = fitted.to_json();
  log->info("uncertainty calibration on {}: s_e {:.4g}, s_f {:.4g} ({:.1f} s)", fitted.fitted_on,
            fitted.energy, fitted.force,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// ----------------------------------------------------------------------------------------------- loop

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

TrainResult Trainer::run() {
  Impl& m = *impl_;
  TrainResult result;
  StopSignal stop_guard;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (!m.resumed_from().empty() && m.step >= m.cfg.numb_steps) {
    throw ConfigError(fmt::format(
        "checkpoint {} is at step {} and 'training.numb_steps' in {} is {}: nothing is left to train; set "
        "numb_steps above {} to continue the run (or use --init-model to start a new one from its weights)",
        m.resumed_from(), m.step, m.cfg.file, m.cfg.numb_steps, m.step));
  }
  const std::string lcurve_path = m.out(m.cfg.disp_file);
  const std::string ckpt_path = m.out(m.cfg.save_ckpt);
  std::unique_ptr<LearningCurve> lcurve;  // root only
  const bool virial_columns = std::any_of(m.data.train.begin(), m.data.train.end(),
                                          [](const FrameSubset& s) { return s.info().has_virial; });
  m.together([&] {
    if (!m.root()) return;
    json resolved = m.cfg.to_json();
    resolved["optimizer"] = m.optimizer->settings();  // "auto" settings as the memory plan chose them
    write_text_atomically(m.out("input.resolved.json"), resolved.dump(2) + "\n");
    lcurve = std::make_unique<LearningCurve>(lcurve_path, m.opt.restart.empty() ? -1 : m.step, virial_columns,
                                             m.optimizer->status_name());
  });
  ProgressBar progress(m.step, m.cfg.numb_steps, m.root() ? m.opt.progress : 0);
  m.log->info("training from step {} to {}", m.step, m.cfg.numb_steps);

  // A non-finite innovation, loss or prediction ends the run here, naming the step and the batch, before a
  // checkpoint or model could hold non-finite weights; the last checkpoint stays as it was.
  std::string last_checkpoint = m.resumed_from().empty() ? std::string("none written") : m.resumed_from();
  const auto diverged = [&](std::int64_t step, const std::string& what) {
    return OptimError(
        fmt::format("training stopped at step {}: {}; last checkpoint: {}", step, what, last_checkpoint));
  };
  auto display = [&](const ErrorMetrics& trn) {
    const ErrorMetrics val = m.validate(false);
    if (!val.finite()) throw diverged(m.step, "the model predicts non-finite values for validation frames");
    result.validation = val;
    result.training = trn;
    const std::string status = m.optimizer->status_line(m.step);
    if (!m.root()) return;
    lcurve->add(m.step, val, trn, m.optimizer->status_value(m.step), m.wall_before + elapsed());
    progress.clear();
    // Without validation data the validation columns say so instead of showing nan.
    const auto val_e = val.e_count > 0 ? fmt::format("val {:.3e} ", val.rmse_e()) : std::string();
    const auto val_f = val.e_count > 0 ? fmt::format("val {:.3e} ", val.rmse_f()) : std::string();
    m.log->info("step {:>7}  rmse_e {}trn {:.3e} eV/atom  rmse_f {}trn {:.3e} eV/A  {}", m.step, val_e,
                trn.rmse_e(), val_f, trn.rmse_f(), status);
  };

  const std::int64_t end = m.opt.pause_at > 0 ? std::min(m.opt.pause_at, m.cfg.numb_steps) : m.cfg.numb_steps;
  while (m.step < end) {
    const BatchRef ref = m.sampler->next();
    ErrorMetrics trn;
    try {
      trn = m.train_step(ref);
    } catch (const OptimError& e) {
      throw diverged(m.step + 1, fmt::format("{} ({})", e.what(), batch_text(m.data.train, ref)));
    }
    if (m.optimizer->batch_errors() && !trn.finite())
      throw diverged(m.step + 1,
                     fmt::format("the loss is not finite: the model predicts non-finite values for {}",
                                 batch_text(m.data.train, ref)));
    ++m.step;
    const bool last = m.step == end;
    if (m.step % m.cfg.disp_freq == 0 || last || m.step == 1) {
      if (!m.optimizer->batch_errors()) {
        // Errors of the training batch on the weights after the update.
        const Batch b = m.local_batch(m.data.train, ref);
        trn = ErrorMetrics{};
        if (b.coord.size(0) > 0) trn.add(m.model->evaluate(b.coord, b.atype, b.nlist, b.shift, false), b);
      }
      auto packed = trn.pack();
      m.reduce(packed);
      trn.unpack(packed);
      if (!trn.finite())
        throw diverged(m.step, "after the update the model predicts non-finite values for " +
                                   batch_text(m.data.train, ref));
      display(trn);
    }
    progress.update(m.step, fmt::format("rmse_f {:.3e}", result.training.rmse_f()));
    const bool stop = m.comm->any(StopSignal::requested());
    if (m.step % m.cfg.save_freq == 0 || last || stop) {
      if (const auto p = first_nonfinite_parameter(m.model); p >= 0)
        throw diverged(m.step, fmt::format("parameter tensor {} of the model holds non-finite values", p));
      // The last checkpoint and the model file carry the calibration of the weights they hold.
      if (last && !stop && m.step == m.cfg.numb_steps) m.calibrate_uncertainty();
      m.write_checkpoint_now(ckpt_path);
      result.checkpoint = ckpt_path;
      last_checkpoint = fmt::format("{} (step {})", ckpt_path, m.step);
    }
    if (stop) {
      progress.clear();
      m.log->info("stopped by signal {} at step {}; checkpoint {} (continue with --restart)",
                  StopSignal::signal_number(), m.step, ckpt_path);
      result.interrupted = true;
      break;
    }
  }
  progress.finish();
  result.wall_seconds = elapsed();
  if (!result.interrupted && !m.data.valid.empty()) {
    // The displays sample numb_btch batches; the final figure covers every validation frame.
    result.validation = m.validate(true);
    const auto& v = result.validation;
    m.log->info("validation on all {} frames: rmse_e {:.3e} eV/atom, rmse_f {:.3e} eV/A{}", v.e_count,
                v.rmse_e(), v.rmse_f(),
                v.has_virial() ? fmt::format(", rmse_v {:.3e} eV/atom", v.rmse_v()) : std::string());
  }
  result.steps = m.step;
  if (!result.interrupted && m.opt.write_model) {
    m.together([&] {
      if (!m.root()) return;
      result.model = m.out("model.pt");
      save_model(result.model, m.model, m.provenance(), m.calibration);
      m.log->info("model written to {}", result.model);
    });
  }
  m.comm->barrier();
  return result;
}

}  // namespace deepkf
