#include "src/eval/FrameErrors.hpp"

#include <torch/torch.h>

namespace deepkf {

FrameErrors frame_errors(const System& labels, std::int64_t frame, double energy, const double* force) {
  FrameErrors e;
  const auto f = static_cast<std::size_t>(frame);
  if (!labels.energy.empty()) e.energy = (energy - labels.energy[f]) / static_cast<double>(labels.natoms);
  if (!labels.has_force()) return e;
  const auto n = labels.natoms;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  const auto ref = torch::from_blob(const_cast<double*>(labels.force.data()) + f * 3 * n, {n, 3}, opts);
  e.force = torch::from_blob(const_cast<double*>(force), {n, 3}, opts) - ref;
  e.force_rmse = e.force.square().mean().sqrt().item<double>();
  e.force_max = e.force.square().sum(1).max().sqrt().item<double>();
  return e;
}

}  // namespace deepkf
