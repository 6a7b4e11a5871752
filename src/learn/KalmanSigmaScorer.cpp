#include "src/learn/KalmanSigmaScorer.hpp"

#include <fmt/format.h>

#include <limits>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/FrameSource.hpp"
#include "src/geometry/NeighborList.hpp"
#include "src/train/CheckpointCovariance.hpp"

namespace deepkf {

KalmanSigmaScorer::KalmanSigmaScorer(std::int64_t force_atoms, std::uint64_t seed) {
  options_.force_atoms = force_atoms;
  options_.seed = seed;
}

KalmanSigmaScorer::~KalmanSigmaScorer() = default;

std::string KalmanSigmaScorer::describe() const {
  return calibration_.has_force() ? "max Kalman force sigma (eV/A)"
                                  : "max Kalman force sigma (uncalibrated, filter units)";
}

void KalmanSigmaScorer::use_models(const std::vector<std::string>& checkpoints) {
  if (checkpoints.empty()) throw Error("select.method \"kalman_sigma\" needs a trained model's checkpoint");
  if (checkpoints.front() == checkpoint_path_ && filter_) return;
  filter_.reset();
  checkpoint_path_ = checkpoints.front();
  checkpoint_ = read_checkpoint(checkpoint_path_, torch::kCPU);
  filter_ = checkpoint_covariance(checkpoint_, checkpoint_path_, make_serial_communicator());
  calibration_ = checkpoint_.meta.contains("uncertainty_calibration")
                     ? UncertaintyCalibration::from_json(checkpoint_.meta["uncertainty_calibration"],
                                                         "checkpoint " + checkpoint_path_)
                     : UncertaintyCalibration{};
}

std::vector<double> KalmanSigmaScorer::score(const ExploredRun& run) const {
  if (!filter_) throw Error("KalmanSigmaScorer::score before use_models");
  const std::int64_t nframes = run.trajectory.frames.nframes;
  // A frame with atoms on top of each other (an MD run that blew up) cannot be evaluated: it scores +inf,
  // beyond any trust window, as the ensemble's deviation of such a frame would be.
  std::vector<double> out(static_cast<std::size_t>(nframes), std::numeric_limits<double>::infinity());
  System frames = run.trajectory.frames;
  remap_types(frames, checkpoint_.model->config().type_map);
  FrameSubset set{nullptr, {}};
  for (std::int64_t f = 0; f < nframes; ++f) {
    try {
      const CloseContact c = find_close_contact(frames.coord.data() + 3 * f * frames.natoms, frames.natoms,
                                                frames.box.data() + 9 * f, kMinAtomDistance);
      if (!c.found) set.frames.push_back(f);
    } catch (const DataError&) {  // a degenerate cell
    }
  }
  if (set.frames.empty()) return out;
  set.source = std::make_shared<MemoryFrameSource>(std::move(frames));
  auto comm = make_serial_communicator();
  const auto scored = score_frames(checkpoint_.model, *filter_, {set}, options_, *comm);
  for (std::size_t k = 0; k < scored.frames.size(); ++k)
    out[static_cast<std::size_t>(set.frames[k])] = frame_sigma(scored.frames[k], calibration_).sigma_f_max;
  return out;
}

}  // namespace deepkf
