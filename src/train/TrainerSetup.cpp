// Trainer set-up: threads and device, data and model, the optimizer, and restoring a checkpoint.
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
#include "src/core/OpenMpWait.hpp"
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
#include "src/train/SystemProbabilities.hpp"
#include "src/train/TrainerImpl.hpp"
#include "src/train/TrainingDevice.hpp"
#include "src/train/TrainingLog.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"

namespace deepkf {
namespace fs = std::filesystem;

namespace {

// The share of the batches each training system gets (training_data.sys_probs, auto_prob), logged; empty
// when every frame is visited once per epoch.
std::vector<double> drawing_probabilities(const TrainingData& data, const TrainConfig& cfg,
                                          spdlog::logger& log) {
  std::vector<std::int64_t> batches;
  for (std::size_t s = 0; s < data.train.size(); ++s)
    batches.push_back(plain_batches(data.train[s].nframes(), data.batch_size[s], data.repeat[s]));
  const DataSection& d = cfg.training_data;
  auto p = system_probabilities(d.sys_probs, d.auto_prob, batches, "training.training_data", cfg.file);
  if (p.empty()) return p;
  const std::int64_t total = std::accumulate(batches.begin(), batches.end(), std::int64_t{0});
  log.info("training systems drawn by {}: {} batches per epoch, shared as",
           d.sys_probs.empty() ? "auto_prob" : "sys_probs", total);
  for (std::size_t s = 0; s < p.size(); ++s) {
    log.info("  {:.4f} ({:.1f} batches per epoch, {} frames) {}", p[s], p[s] * static_cast<double>(total),
             data.train[s].nframes(), data.train[s].info().source);
  }
  return p;
}

}  // namespace
using json = nlohmann::json;

void Trainer::Impl::setup_threads_and_device() {
  const int threads = training_threads(cfg, *comm);
  torch::set_num_threads(threads);
  device = training_device(cfg, *comm);
  log->info("ranks {}, threads per rank {} (idle threads: {}), matrix products: {}, device {}", comm->size(),
            threads, openmp_wait_text(), blas_threads_text(), device.str());
}

void Trainer::Impl::build_optimizer(const json& restored) {
  StepResources res = step_resources(device, *comm, data, mcfg);
  res.restored = restored;
  optimizer = make_training_step(cfg.step(), model, comm, res);
  log->info("{}", optimizer->describe());
}

void Trainer::Impl::setup() {
  TrainingOutput output = open_training_output(*comm, opt.output_dir, /*append=*/!opt.restart.empty());
  log = output.log;
  output_lock = std::move(output.lock);
  saver = std::make_unique<CheckpointSaver>(
      checkpoint_saver_mode(cfg.save_in_background),
      [log = log](const std::string& path, std::int64_t at, std::int64_t bytes, double seconds) {
        log->info("{}", checkpoint_written(path, at, bytes, seconds, " in the background"));
      });
  setup_threads_and_device();
  for (const auto& key : cfg.ignored_keys) log->info("input key {} has no effect in deepkf", key);
  if (!cfg.unused_keys.empty()) {
    log->info("input keys of another optimizer, unused with {}: {}", cfg.optimizer,
              fmt::join(cfg.unused_keys, ", "));
  }
  data = open_training_data(cfg, *comm, *log);
  std::vector<std::int64_t> nframes;
  for (const auto& s : data.train) nframes.push_back(s.nframes());
  sampler = std::make_unique<BatchSampler>(nframes, data.batch_size, cfg.seed, data.repeat,
                                           drawing_probabilities(data, cfg, *log));
  if (const auto line = cfg.resolve_numb_steps(sampler->batches_per_epoch()); !line.empty())
    log->info("{}", line);

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
    // A model file, or a checkpoint as DeePMD-kit's --init-model takes one: its weights only.
    const bool from_checkpoint = is_training_checkpoint(opt.init_model);
    together([&] {
      LoadedModel loaded;
      if (from_checkpoint) {
        loaded.model = read_checkpoint(opt.init_model, torch::kCPU).model;
        loaded.config = loaded.model->config();
      } else {
        loaded = load_model(opt.init_model, torch::kCPU);
      }
      if (loaded.model->compressed()) {
        throw ConfigError("--init-model " + opt.init_model +
                          " is a compressed model (deepkf compress): training continues on an uncompressed "
                          "model; give the model file it was compressed from");
      }
      // The input's choice of what to train (fine-tuning: a frozen descriptor, say) applies to the weights.
      const ModelConfig input = ModelConfig::from_json(cfg.model, cfg.file);
      loaded.model->set_trainable(input.descriptor_trainable, input.fitting_trainable);
      mcfg = loaded.model->config();
      model = loaded.model;
    });
    if (from_checkpoint) {
      log->info(
          "starting from the weights of checkpoint {} ({} parameters; its optimizer state is not used: "
          "--continue would keep it)",
          opt.init_model, model->parameter_count());
    } else {
      log->info("starting from model {} ({} parameters)", opt.init_model, model->parameter_count());
    }
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
    if (cfg.optimizer == "RLEKF") {
      log->info(
          "RLEKF starts a fresh covariance on these trained weights: on DeePMD-kit's water model its forces "
          "did not improve within hundreds of steps from there (docs/rlekf.md, \"From trained weights\"); "
          "--continue from an RLEKF checkpoint keeps its covariance");
    }
    record_training_range(model, mcfg, data.train, *comm, *log);
    if (opt.finetune) refit_bias_for_finetune();
  }
  prepare_optimizer();
}

void Trainer::Impl::refit_bias_for_finetune() {
  const BiasRefit fit = refit_energy_bias(model, {data.train, data.batch_size}, device, *comm);
  for (const auto& w : fit.warnings) log->warn("{}", w);
  log->info(
      "energy bias refitted to the training data for fine-tuning (--finetune) by {} eV: rmse_e on the {} "
      "training frames {:.4e} -> {:.4e} eV/atom",
      fit.shift_text(mcfg.type_map), fit.frames, fit.rmse_before, fit.rmse_after);
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
  if (cfg.enable_ema) {
    average = std::make_unique<WeightAverage>(model, cfg.ema_decay);
    if (!average->load(ckpt.optimizer, path))
      log->info("checkpoint {} holds no average of the weights: enable_ema starts it from its weights", path);
  }
  step = ckpt.meta.at("step").get<std::int64_t>();
  wall_before = ckpt.meta.value("wall_seconds", 0.0);
  step_time = ckpt.meta.value("step_seconds", 0.0);
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

}  // namespace deepkf
