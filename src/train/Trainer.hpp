#pragma once
// The trainer: the training data (opened, frames read per batch), a DeepPot model and an optimizer (RLEKF or
// Adam), built complete from a TrainConfig, and the loop that fits the model, writes the learning curve and
// checkpoints, and restarts exactly from a checkpoint. Data-parallel over the ranks of its Communicator:
// each rank reads and evaluates only its share of every global batch, and the gradients and error sums are
// summed over ranks. A failure that happens on
// some ranks only while reading inputs or writing outputs (a missing file, an unwritable output directory)
// is raised on every rank, so no rank is left waiting in a collective; a failure inside a training step
// is not, and a program must end the job (MPI_Abort) when one rank throws.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/eval/ErrorMetrics.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf {

struct TrainerOptions {
  std::string output_dir = ".";  // lcurve, checkpoints, model and logs go here
  std::string restart;           // checkpoint to continue from (weights, optimizer, data order, RNG)
  std::string continue_from;     // checkpoint whose weights and optimizer state (RLEKF: covariance and
                                 // lambda) go on learning from this input's data, which may have changed
                                 // (grown): the data order starts afresh at epoch 0; steps count on
  std::string init_model;        // model file to start from (fine-tuning): weights and statistics
  bool finetune = false;         // with init_model: refit its energy bias to the training data first
                                 // (dp train --finetune; src/train/EnergyBiasRefit.hpp)
  int progress = -1;             // progress bar: -1 when stderr is a terminal, 0 never, 1 always
  bool write_model = true;       // write model.pt at the end
  std::int64_t pause_at = 0;     // > 0: return after this step with a checkpoint, as if numb_steps were
                                 // reached, without changing the schedules (which follow numb_steps)
};

struct TrainResult {
  std::int64_t steps = 0;     // steps done in total (including those before a restart)
  bool interrupted = false;   // stopped by SIGINT/SIGTERM (a checkpoint was written)
  double wall_seconds = 0.0;  // this run's training time
  ErrorMetrics validation;    // last validation errors (empty without validation data)
  ErrorMetrics training;      // last training-batch errors
  std::string checkpoint;     // last checkpoint written
  std::string model;          // model file written at the end ("" if none)
  // enable_ema: the model file of the averaged weights, and their validation errors.
  std::string model_average;
  ErrorMetrics validation_average;
};

class Trainer {
 public:
  Trainer(const TrainConfig& config, const TrainerOptions& options, std::shared_ptr<Communicator> comm);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains to config.numb_steps (or until a stop signal); returns what was done.
  TrainResult run();

  // Steps already done (non-zero after a restart).
  std::int64_t step() const;
  // The model's flattened trainable parameters (for tests comparing runs), float64 on the CPU.
  std::vector<double> flat_parameters() const;
  // Frames this rank has read from the data files so far (set-up checks included). Each rank reads only
  // the frames of its share: about 1/R of a single rank's count.
  std::int64_t frames_read() const;
  // Bytes of the RLEKF covariance blocks held by this rank (about 1/R of the total on R ranks); 0 for Adam.
  std::int64_t covariance_bytes() const;

 private:
  struct Impl;
  struct Run;  // one call of run() (Trainer.cpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepkf
