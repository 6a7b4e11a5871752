#pragma once
// One optimizer step on one global batch, as the training loop (src/train/Trainer.hpp) sees it: the loop
// hands each step its rank's share of the batch and asks for a status value to log; checkpoints save and
// stream the step's state. A step owns what happens in between: measure (or take the loss) on the model,
// sum over ranks (RankSums.hpp, the step's only collectives besides the filter's own), form the innovations
// and update. Two implementations: RlekfStep (the energy, force groups and virial as Kalman measurements,
// joint or one after another) and AdamStep (one gradient step on DeePMD-kit's ener loss), chosen by
// make_training_step (Optimizers.hpp) from the input's optimizer.
#include <fmt/format.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Communicator.hpp"
#include "src/data/FrameSource.hpp"
#include "src/eval/ErrorMetrics.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

// What a training step knows of the run: the optimizer's name and settings as a resolved input's
// "optimizer" section holds them, the input file (for messages), the run's length (the schedules) and
// seed (RLEKF's atom draws). TrainConfig::step() makes it from an input file.
struct StepConfig {
  std::string optimizer = "RLEKF";  // "RLEKF" or "Adam"
  nlohmann::json settings;          // RlekfSettings or AdamSettings::to_json()
  std::string file;
  std::int64_t numb_steps = 1;
  std::uint64_t seed = 1;
};

struct StepInput {
  const Batch& local;          // this rank's frames of the batch (possibly none)
  const SystemInfo& info;      // the batch's system: atoms per frame, which labels exist
  std::int64_t global_frames;  // frames of the batch over all ranks
  std::int64_t first_frame;    // position of this rank's first frame in the global batch
  std::int64_t step;           // steps done before this one
  // Earlier training frames whose energies join the batch's energy measurements (RLEKF's energy_replay):
  // this rank's share, one Batch per system, and their number over all ranks.
  std::vector<Batch> replay = {};
  std::int64_t replay_frames = 0;
};

// What a step may use, given to the factory: the memory one rank can use and one batch's estimated
// activations (optim/MemoryPlan.hpp), and when restoring, the settings the checkpoint was written with.
struct StepResources {
  std::int64_t available = -1;   // bytes one rank can use; -1: unknown
  std::string where = "host";    // "host" or the device, for messages
  std::int64_t batch_bytes = 0;  // the force measurement's graph of one batch
  // The energy measurement's graph per frame, and the batch's frames on a rank (RLEKF's replayed frames
  // join the batch's in one energy graph).
  std::int64_t frame_energy_bytes = 0;
  std::int64_t batch_frames = 1;
  // The training set's mean atoms per frame and frames per (global) batch, weighted by frames: what RLEKF's
  // energy_replay "auto" is chosen from.
  double mean_frame_atoms = 0.0;
  double mean_batch_frames = 1.0;
  // The checkpoint's resolved optimizer settings when restoring (an empty object for a checkpoint that
  // does not record them), null for a new run. Settings the input leaves to "auto" take these values.
  nlohmann::json restored;
};

// Covariance-like state too large for an archive: blocks streamed to rank 0 one at a time (checkpoints).
using BlockSink = std::function<void(std::int64_t, const torch::Tensor&)>;
using BlockSource = std::function<torch::Tensor(std::int64_t)>;

class TrainingStep {
 public:
  virtual ~TrainingStep() = default;
  // "RLEKF" or "Adam".
  virtual std::string name() const = 0;
  // The set-up line for the log (sizes, memory, schedule).
  virtual std::string describe() const = 0;
  // The settings in use, every "auto" resolved, as the "optimizer" section of a resolved input.
  virtual nlohmann::json settings() const = 0;
  // Updates the model's weights from one batch. Collective. Returns this rank's errors of the batch as the
  // step saw them when batch_errors() is true, else nothing (the loop then evaluates the batch itself).
  virtual ErrorMetrics take(const StepInput& in) = 0;
  // Called once before the first step of a new run (not on restart) with the first batches the run will
  // take, this rank's share of each: settings derived from the data are chosen here (RLEKF's automatic
  // p0). Returns a line for the log, or nothing. Collective.
  virtual std::string prepare(const std::vector<StepInput>& /*first*/) { return {}; }
  virtual bool batch_errors() const = 0;
  // Training frames to draw for each step's StepInput::replay; 0 for none.
  virtual int replay_frames() const { return 0; }
  // The schedule value of the learning curve's last column, with its name ("lambda", "lr").
  virtual std::string status_name() const = 0;
  virtual double status_value(std::int64_t step) const = 0;
  // The end of the log's display line after `step` steps: the schedule value, and whatever else the
  // optimizer reports. Collective (every rank calls it at each display; rank 0 prints it).
  virtual std::string status_line(std::int64_t step) {
    return fmt::format("{} {:.6g}", status_name(), status_value(step));
  }
  // Where this rank's step time went over the run, for the log's last lines; "" when not measured.
  virtual std::string time_summary() const { return {}; }
  // Bytes of the RLEKF covariance held by this rank; 0 for optimizers without one.
  virtual std::int64_t covariance_bytes() const { return 0; }
  // The covariance of the weights this optimizer tracks, which gives the predicted uncertainty
  // (src/uncertainty/KalmanUncertainty.hpp): RLEKF's Kalman filter; null for one that tracks none (Adam).
  virtual KalmanFilter* weight_covariance() { return nullptr; }

  // Checkpoints: the small state goes into `archive`; the blocks of block_sizes() (values of block_dtype())
  // are streamed to rank 0 by stream_blocks, collectively, sink called on rank 0 only.
  virtual void save(torch::serialize::OutputArchive& archive) = 0;
  virtual std::vector<std::int64_t> block_sizes() const { return {}; }
  virtual torch::ScalarType block_dtype() const { return torch::kFloat64; }
  virtual void stream_blocks(const BlockSink& /*sink*/) {}
  // Restores what save() and stream_blocks() wrote; blocks missing from the archive come from read_block.
  virtual void load(torch::serialize::InputArchive& archive, const BlockSource& read_block) = 0;

  // Checkpoints written while training goes on without a copy of the covariance (src/train/
  // CheckpointSaver.hpp): begin_journal() starts keeping the covariance's changes (false: this step cannot,
  // nothing started); copy_block(i, into) may then be called from another thread, copies block i's stored
  // packed values to `into` and returns how many of the block's changes they hold; end_journal() returns
  // the changes (optim/CovarianceJournal.hpp) and stops; journal_bytes() is what the changes take meanwhile.
  // One rank only.
  virtual bool begin_journal() { return false; }
  virtual std::int64_t journal_bytes() const { return 0; }
  virtual std::int64_t copy_block(std::int64_t /*i*/, void* /*into*/) const { return 0; }
  virtual CovarianceJournal end_journal() { return {}; }
};

}  // namespace deepkf
