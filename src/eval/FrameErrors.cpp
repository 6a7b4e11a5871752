#include "src/eval/FrameErrors.hpp"

#include <torch/torch.h>

#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

FrameErrors frame_errors(const ModelOutput& out, const Batch& batch, std::int64_t k) {
  FrameErrors e;
  const double n = static_cast<double>(batch.natoms);
  if (batch.energy.defined()) e.energy = (out.energy[k].item<double>() - batch.energy[k].item<double>()) / n;
  if (!batch.has_force) return e;
  e.force = (out.force[k].detach() - batch.force[k]).to(torch::kCPU, torch::kFloat64).contiguous();
  e.force_rmse = e.force.square().mean().sqrt().item<double>();
  e.force_max = e.force.square().sum(1).max().sqrt().item<double>();
  return e;
}

}  // namespace deepkf
