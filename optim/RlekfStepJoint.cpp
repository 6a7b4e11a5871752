// RlekfStep::take_joint: the step of kf_update "joint", every measurement of the batch from one model graph
// and one sweep of the covariance (docs/rlekf.md, "Joint measurement update").
#include <torch/torch.h>

#include "optim/KalmanMeasurement.hpp"
#include "optim/RankSums.hpp"
#include "optim/RlekfStep.hpp"

namespace deepkf {

ErrorMetrics RlekfStep::take_joint(const StepInput& in) {
  const Batch& b = in.local;
  const SystemInfo& info = in.info;
  const Prefactors pref = prefactors(in.step);
  timing_.begin_step();
  // The measurements of the step, all on the current weights and one evaluation of the batch: the energy
  // (its replayed frames on energy graphs of their own), the force groups and the virial from the same
  // forward and first backward pass (with force_gradient "difference", their gradients from one energy
  // pass each, DifferenceGradients.hpp).
  std::vector<Measured> ms;
  std::vector<std::int64_t> frames;
  std::vector<double> shares;
  const bool forces = info.has_force && pref.force > 0.0;
  const bool virial = info.has_virial && pref.virial > 0.0;
  const bool has_frames = b.coord.size(0) > 0;
  // With energies only, energy_measured takes their graph alone, without the forces'.
  ModelOutput out;
  if (has_frames && (forces || virial)) out = evaluate_for_forces(b, energy_from_forces_pass(in));
  ms.push_back(energy_measured(in, pref.energy, out));
  frames.push_back(in.global_frames + in.replay_frames);
  shares.push_back(options_.energy_share);
  if (forces) {
    const auto groups = selector_.select(in.first_frame, b.coord.size(0), in.global_frames, info.natoms,
                                         params_.front().device());
    for (const auto& atoms : groups) {
      ms.push_back(has_frames ? force_measured(b, out, atoms, pref.force) : Measured{});
      frames.push_back(in.global_frames);
      shares.push_back(options_.force_share);
    }
  }
  if (virial) {
    ms.push_back(has_frames ? virial_measured(b, out, pref.virial) : Measured{});
    frames.push_back(in.global_frames);
    shares.push_back(options_.virial_share);
  }
  // The m gradients, summed over ranks in one reduction; the innovations' pieces in another.
  const SummedMeasurements sum = sum_measured(std::move(ms), frames);
  for (double& s : shares) s = options_.share_at(s, in.step);
  timing_.begin_filter();
  filter_.update_joint(sum.e, sum.grads, shares, options_.share_cap());
  timing_.end_filter();
  if (options_.energy_last) {
    // The energy again on the weights the joint update left, as the sequential step ends (energy_last).
    sync_measured();
    update_one(sum_measurements({energy_of(in, pref.energy)}, {in.global_frames + in.replay_frames},
                                measured_params_, *comm_),
               options_.share_at(options_.energy_share, in.step));
  }
  timing_.end_step();
  return {};
}

}  // namespace deepkf
