#pragma once
// How uncertain the current model is about each explored frame: the score that selection compares with the
// trust window. One implementation per method of `select.method`; the loop only sees this interface.
//   model_deviation (EnsembleDeviationScorer): the ensemble's maximum per-atom force deviation, as
//     pair_style deepkf writes it to model_devi.out while exploring (eV/A).
//   kalman_sigma (KalmanSigmaScorer): the largest predicted force sigma of one RLEKF model, from the
//     covariance in its checkpoint (docs/uncertainty.md); it evaluates the trajectory's frames itself.
//   random (UniformScorer): no score, every frame alike: frames are then drawn at random (a baseline).
#include <memory>
#include <string>
#include <vector>

#include "src/learn/LammpsTrajectory.hpp"
#include "src/learn/LearnConfig.hpp"

namespace deepkf {

// One exploration run, as it is scored.
struct ExploredRun {
  std::string dir;            // the run's folder: its input, log, dump and model_devi.out
  ExploredFrames trajectory;  // the frames it dumped
};

class FrameScorer {
 public:
  virtual ~FrameScorer() = default;
  // The score and its unit, for logs, records and plots: "max force deviation (eV/A)".
  virtual std::string describe() const = 0;
  // The iteration's trained models, before its frames are scored: their training checkpoints, the first
  // member's first. A scorer that reads a model itself loads it here.
  virtual void use_models(const std::vector<std::string>& /*checkpoints*/) {}
  // One score per frame of run.trajectory, in its order (larger: less certain). Throws DataError naming the
  // file when what it needs is missing or malformed.
  virtual std::vector<double> score(const ExploredRun& run) const = 0;
};

// The scorer of select.method (LearnConfig); ConfigError for an unknown method.
std::unique_ptr<FrameScorer> make_frame_scorer(const SelectConfig& select, std::uint64_t seed);

}  // namespace deepkf
