#pragma once
// The Kalman sigma of one RLEKF model (docs/uncertainty.md) as the selection score: the covariance P of the
// first ensemble member's checkpoint predicts the variance of each force component, h^T P h, and a frame
// scores max_i sigma_f,i over its scored atoms, sigma_f,i = sqrt(sum_a sigma_ia^2): the counterpart of the
// ensemble's max force deviation, from one model instead of several. The factor fitted at the end of training
// (training.calibration_frames, with validation data) puts it in eV/A; without one it is sqrt(h^T P h) in
// the filter's units, which a relative trust window (select.relative) compares as well. A frame with two
// atoms closer than kMinAtomDistance (an MD run that blew up) scores +inf: beyond any window.
#include <cstdint>
#include <memory>
#include <string>

#include "optim/KalmanFilter.hpp"
#include "src/learn/FrameScorer.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"

namespace deepkf {

class KalmanSigmaScorer final : public FrameScorer {
 public:
  // `force_atoms`: atoms scored per frame (3 backward passes each), drawn at random; 0: every atom.
  KalmanSigmaScorer(std::int64_t force_atoms, std::uint64_t seed);
  ~KalmanSigmaScorer() override;

  std::string describe() const override;
  // Reads the checkpoint: its model, covariance and calibration (ConfigError naming the file for another
  // optimizer's checkpoint).
  void use_models(const std::vector<std::string>& checkpoints) override;
  std::vector<double> score(const ExploredRun& run) const override;

 private:
  UncertaintyOptions options_;
  std::string checkpoint_path_;
  LoadedCheckpoint checkpoint_;
  std::unique_ptr<KalmanFilter> filter_;
  UncertaintyCalibration calibration_;
};

}  // namespace deepkf
