#include "python/src/KalmanSigma.hpp"

#include <memory>

#include "optim/KalmanFilter.hpp"
#include "src/core/Communicator.hpp"
#include "src/data/FrameSource.hpp"
#include "src/train/CheckpointCovariance.hpp"
#include "src/uncertainty/KalmanUncertainty.hpp"

namespace deepkf::python {

KalmanSigma::KalmanSigma(const std::string& checkpoint) : path_(checkpoint) {
  ckpt_ = read_checkpoint(checkpoint, torch::kCPU);
  filter_ = checkpoint_covariance(ckpt_, checkpoint, make_serial_communicator());
  if (ckpt_.meta.contains("uncertainty_calibration") && !ckpt_.meta["uncertainty_calibration"].is_null())
    calibration_ =
        UncertaintyCalibration::from_json(ckpt_.meta["uncertainty_calibration"], "checkpoint " + checkpoint);
}

KalmanSigma::~KalmanSigma() = default;

const std::vector<std::string>& KalmanSigma::type_map() const { return ckpt_.model->config().type_map; }

FrameSigmas KalmanSigma::evaluate(const PotentialFrames& frames, std::int64_t force_atoms,
                                  std::uint64_t seed) const {
  // The frames as one in-memory system of the model's types, checked as Potential checks them.
  System s = frames_as_system(frames, ckpt_.model->config());
  const std::vector<std::shared_ptr<FrameSource>> sources{std::make_shared<MemoryFrameSource>(std::move(s))};
  UncertaintyOptions options;
  options.force_atoms = force_atoms;
  options.seed = seed;
  auto comm = make_serial_communicator();
  const auto scored = score_frames(ckpt_.model, *filter_, whole(sources), options, *comm);
  FrameSigmas out;
  for (const FrameScore& score : scored.frames) {
    const FrameSigma sigma = frame_sigma(score, calibration_);
    out.sigma_e.push_back(sigma.sigma_e);
    out.sigma_f_max.push_back(sigma.sigma_f_max);
    out.sigma_f_mean.push_back(sigma.sigma_f_mean);
    out.sigma_f_rms.push_back(sigma.sigma_f_rms);
  }
  return out;
}

}  // namespace deepkf::python
