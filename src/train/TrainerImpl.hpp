#pragma once
// The state of a training run behind Trainer's interface, shared by the files that implement it:
// TrainerSetup.cpp (data, model, optimizer, restarts), TrainerSteps.cpp (a step, validation, checkpoints,
// calibration) and Trainer.cpp (the loop). Not part of the train layer's interface.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "optim/Optimizers.hpp"
#include "src/core/FolderLock.hpp"
#include "src/core/Together.hpp"
#include "src/eval/ErrorMetrics.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/BatchSampler.hpp"
#include "src/train/CheckpointSaver.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/Trainer.hpp"
#include "src/train/WeightAverage.hpp"

namespace deepkf {

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
  std::unique_ptr<FolderLock> output_lock;  // rank 0: the output folder, until run() ends
  std::unique_ptr<WeightAverage> average;   // enable_ema: the moving average of the weights
  double wall_before = 0.0;                 // training seconds of earlier runs (restarts)
  double step_time = 0.0;  // seconds inside the training steps, earlier runs' included (lcurve.out's step_s)
  std::chrono::steady_clock::time_point run_start = std::chrono::steady_clock::now();  // set by run()
  nlohmann::json calibration;  // of the predicted uncertainty (docs/uncertainty.md), null until fitted
  // Last, so that it is destroyed first: its thread may still be writing a checkpoint (set up by setup()).
  std::unique_ptr<CheckpointSaver> saver;

  Impl(const TrainConfig& c, const TrainerOptions& o, std::shared_ptr<Communicator> cm)
      : cfg(c), opt(o), comm(std::move(cm)) {}

  bool root() const { return comm->rank() == 0; }
  // Seconds of training so far, earlier runs' included: lcurve.out's wall_s, kept in the checkpoint.
  double wall_seconds() const {
    return wall_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  }
  // Seconds inside the training steps so far (optimizer updates, the model passes they take, the batches'
  // assembly), earlier runs' included: lcurve.out's step_s, the training time without the displays'
  // evaluations, checkpoints and model files. Kept in the checkpoint.
  double step_seconds() const { return step_time; }
  std::string out(const std::string& name) const {
    return (std::filesystem::path(opt.output_dir) / name).string();
  }

  void setup();
  void setup_threads_and_device();
  // `restored`: the checkpoint's optimizer settings when restoring (StepResources::restored).
  void build_optimizer(const nlohmann::json& restored = nlohmann::json());
  // same_data: --restart (the data order goes on from the checkpoint's position); otherwise
  // --continue (the input's data, which may differ, from the start of a new order).
  void restore(const std::string& path, bool same_data);
  void refit_bias_for_finetune();  // --finetune: the loaded model's energy bias fitted to the training data
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
  // The training frames whose energies join step `step`'s energy measurements (RLEKF's energy_replay),
  // grouped by system.
  std::vector<BatchRef> replay_refs(int count) const;
  ErrorMetrics validate(bool all_frames);
  // Validation frames a display line's "val" figures cover: numb_btch batches, taken in turn.
  std::int64_t display_validation_frames() const;
  // `last`: the run's last checkpoint, complete on return; others may be written in the background
  // (training.save_in_background).
  void write_checkpoint_now(const std::string& path, bool last);
  // After every step: completes a journal checkpoint whose covariance is written (CheckpointSaver::poll);
  // true when it did.
  bool complete_checkpoint();
  // The checkpoint's run record at the step now.
  nlohmann::json checkpoint_meta() const;
  // The log's line for a checkpoint written (bytes -1: size unknown), `how` after the seconds ("" or " in
  // the background").
  static std::string checkpoint_written(const std::string& path, std::int64_t step, std::int64_t bytes,
                                        double seconds, const std::string& how);
  // change_bias_after_training: shifts the energy bias to fit the training frames (EnergyBiasRefit.hpp)
  // and logs the shift. Collective.
  void change_energy_bias();
  // Fits the uncertainty calibration on validation frames (RLEKF runs with validation data). Collective.
  void calibrate_uncertainty();
  nlohmann::json provenance() const;
};

}  // namespace deepkf
