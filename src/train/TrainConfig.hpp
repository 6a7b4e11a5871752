#pragma once
// The training input file (DeePMD-kit's input.json layout) in typed form. Unknown or misspelt keys are
// errors naming the key and the nearest known one; keys DeePMD-kit has but deepkf does not use are accepted
// and listed in `ignored_keys` so the log can say so.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optim/TrainingStep.hpp"

namespace deepkf {

struct DataSection {
  std::vector<std::string> systems;  // npy folders, file.h5, file.h5#group (relative to the input file)
  // Frames per batch, in DeePMD-kit's forms: a number; "auto" or "auto:N", the smallest batch with at least N
  // (32) atoms; "max:N", the largest with at most N atoms (at least 1 frame); or a list of numbers, one per
  // entry of `systems`. batch_for() resolves it for a system.
  int batch_size = 1;
  enum class BatchRule { kFixed, kAtLeast, kAtMost, kPerPath } batch_rule = BatchRule::kFixed;
  int batch_atoms = 32;          // N of "auto:N" and "max:N"
  std::vector<int> batch_sizes;  // kPerPath: one per entry of `systems`
  // The batch size of a system of `natoms` atoms found under systems[path].
  int batch_for(std::int64_t natoms, std::size_t path) const;
  int numb_btch = 1;  // validation batches per display (validation_data only)
  // Training data only: visits per epoch of the frames of each entry of `systems` (deepkf's key, used by
  // `deepkf learn` to weigh new frames); empty: 1 for all.
  std::vector<int> repeat;
  // Training data only: how often each system is drawn (DeePMD-kit's keys;
  // src/train/SystemProbabilities.hpp). sys_probs: one probability per system found under `systems`
  // (negative: a share of what is left); empty: not given. auto_prob (also spelt auto_prob_style): "" when
  // not given.
  std::vector<double> sys_probs;
  std::string auto_prob;
};

// The names DeePMD-kit takes for the run's length: training.numb_steps, or training.num_epoch.
inline const std::vector<std::string> kNumbStepsNames = {"numb_steps", "stop_batch", "num_step", "num_steps",
                                                         "numb_step"};
inline const std::vector<std::string> kNumEpochNames = {"numb_epoch", "num_epochs", "num_epoch",
                                                        "numb_epochs"};

struct TrainConfig {
  std::string file;                   // the input file, for messages
  std::string base_dir;               // relative system paths are resolved against this
  nlohmann::json model;               // the "model" section, parsed by ModelConfig::from_json
  std::string optimizer = "RLEKF";    // "RLEKF" or "Adam" (optim/Optimizers.hpp)
  nlohmann::json optimizer_settings;  // its settings, resolved: RlekfSettings or AdamSettings::to_json()

  DataSection training_data;
  DataSection validation_data;
  double validation_fraction = 0.0;  // with no validation_data: hold out this fraction...
  std::string validation_split =
      "frame";  // ...of the frames of each system ("frame") or of systems ("system")
  // The length of the run: numb_steps, or numb_epoch passes over the training frames (DeePMD-kit's
  // num_epoch; may be fractional), turned into numb_steps once the data is open (resolve_numb_steps).
  std::int64_t numb_steps = 0;
  double numb_epoch = 0.0;
  std::uint64_t seed = 1;
  int disp_freq = 100;
  int save_freq = 1000;
  std::string disp_file = "lcurve.out";
  std::string save_ckpt = "model.ckpt";
  // Checkpoints before the last: "auto" (a thread writes the covariance from a copy in memory when the
  // host has room for one: src/train/CheckpointSaver.hpp), true (always so) or false (training waits).
  nlohmann::json save_in_background = "auto";
  std::string device = "auto";  // "cpu", "cuda", "cuda:N" or "auto"
  int num_threads = 0;          // 0: one per core
  // Validation frames the predicted uncertainty is calibrated on at the end of an RLEKF run
  // (docs/uncertainty.md); 0: no calibration; kCalibrationAuto: calibration_frames_for(steps).
  static constexpr std::int64_t kCalibrationAuto = -1;
  // With kCalibrationAuto, no new calibration frame is taken after this share of the training's wall time
  // (once 8 are scored).
  static constexpr double kCalibrationTimeShare = 0.1;
  std::int64_t calibration_frames = kCalibrationAuto;
  // The most frames calibrated on after `steps` training steps. "auto": one frame per 10 steps, at most 64
  // (none below 10 steps); a frame costs 1.5 to 9 steps (docs/uncertainty.md, Cost), so the trainer also
  // bounds the time (kCalibrationTimeShare).
  std::int64_t calibration_frames_for(std::int64_t steps) const;

  // After the last step, shift the per-type energy bias by the least-squares fit of the training frames'
  // energy errors (src/train/EnergyBiasRefit.hpp). DeePMD-kit's key; deepkf's default is true.
  bool change_bias_after_training = true;
  // DeePMD-kit's exponential moving average of the weights (src/train/WeightAverage.hpp): kept during
  // training, in the checkpoint, and written as model_ema.pt beside model.pt.
  bool enable_ema = false;
  double ema_decay = 0.999;

  std::vector<std::string> ignored_keys;  // DeePMD-kit keys accepted but without effect here
  std::vector<std::string> unused_keys;   // keys of an optimizer other than the one chosen

  // Reads and validates `path`; throws ConfigError naming the file, key and value on any problem.
  static TrainConfig from_file(const std::string& path);
  // Same from an already-parsed document; `file` is used in messages and `base_dir` for relative paths.
  static TrainConfig from_json(const nlohmann::json& doc, const std::string& file,
                               const std::string& base_dir);
  // The resolved configuration with every default filled in (written next to the outputs).
  nlohmann::json to_json() const;
  // What the training step takes from the input (optim/TrainingStep.hpp).
  StepConfig step() const { return {optimizer, optimizer_settings, file, numb_steps, seed}; }
  // With numb_epoch: numb_steps = ceil(numb_epoch * batches_per_epoch), and a line saying so; else "".
  std::string resolve_numb_steps(std::int64_t batches_per_epoch);
};

}  // namespace deepkf
