#pragma once
// The Kalman uncertainty of a checkpoint's model on frames held in memory (docs/uncertainty.md): what
// `deepkf uncertainty -c CKPT` computes for frames read from files, calibrated as the checkpoint says.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/eval/Potential.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"

namespace deepkf {
class KalmanFilter;
namespace python {

struct FrameSigmas {
  std::vector<double> sigma_e, sigma_f_max, sigma_f_mean, sigma_f_rms;  // one per frame
};

class KalmanSigma {
 public:
  // Reads the checkpoint and its covariance blocks (ConfigError for a checkpoint without covariance).
  explicit KalmanSigma(const std::string& checkpoint);
  ~KalmanSigma();

  // force_atoms atoms scored per frame (0: all), drawn from seed as `deepkf uncertainty` draws them.
  FrameSigmas evaluate(const PotentialFrames& frames, std::int64_t force_atoms, std::uint64_t seed) const;
  bool calibrated() const { return calibration_.has_force() || calibration_.has_energy(); }
  const std::vector<std::string>& type_map() const;

 private:
  std::string path_;
  mutable LoadedCheckpoint ckpt_;
  std::unique_ptr<KalmanFilter> filter_;
  UncertaintyCalibration calibration_;
};

}  // namespace python
}  // namespace deepkf
