#include "src/model/EnvMatrix.hpp"

#include <torch/torch.h>

#include "src/model/ModelConfig.hpp"

namespace deepkf {

torch::Tensor pair_vectors(const torch::Tensor& coord, const torch::Tensor& nlist, const torch::Tensor& shift,
                           double rcut) {
  const auto nf = nlist.size(0);
  const auto nloc = nlist.size(1);
  const auto nnei = nlist.size(2);
  const auto mask = nlist.ge(0);
  // x_j: gather the neighbours' positions by nlist (empty slots read atom 0 and are replaced below)
  const auto index = nlist.clamp_min(0).reshape({nf, nloc * nnei, 1}).expand({nf, nloc * nnei, 3});
  auto xj = coord.gather(1, index).reshape({nf, nloc, nnei, 3});
  if (shift.defined()) xj = xj + shift.to(coord.dtype());
  // r_ij = x_j - x_i
  const auto xi = coord.narrow(1, 0, nloc).unsqueeze(2);
  const auto rij = xj - xi;
  const auto far =
      torch::zeros({3}, coord.options()).index_fill(0, torch::zeros({1}, nlist.options()), 2.0 * rcut);
  return torch::where(mask.unsqueeze(-1), rij, far);
}

std::pair<torch::Tensor, torch::Tensor> switch_weight(const torch::Tensor& rij, double rcut,
                                                      double rcut_smth) {
  // r = |r_ij| (a plain sum of squares: the generic norm kernel is slow over a last dimension of 3)
  const auto r = rij.square().sum(-1, /*keepdim=*/true).sqrt();
  // u = (r - rcut_smth) / (rcut - rcut_smth), clamped to [0, 1]
  const auto u = ((r - rcut_smth) / (rcut - rcut_smth)).clamp(0.0, 1.0);
  // w(r) = u^3 (-6 u^2 + 15 u - 10) + 1, written as (1 - u)^3 (1 + 3 u + 6 u^2): the same polynomial
  // without the cancellation 1 - 1 near the cutoff, where w is tiny and its relative rounding would be large
  const auto v = 1.0 - u;
  return {v * v * v * (u * (u * 6.0 + 3.0) + 1.0), r};
}

torch::Tensor environment_matrix(const torch::Tensor& rij, double rcut, double rcut_smth) {
  const auto [w, r] = switch_weight(rij, rcut, rcut_smth);
  // s = w / r ; row = (s, s x/r, s y/r, s z/r)
  const auto s = w / r;
  return torch::cat({s, rij * (s / r)}, -1);
}

torch::Tensor part_environment(const torch::Tensor& rij, const ModelConfig& mc, std::size_t k) {
  if (!mc.hybrid()) return environment_matrix(rij, mc.rcut, mc.rcut_smth);
  const ModelConfig& part = mc.parts.at(k);
  const auto slots = torch::tensor(mc.part_slots(k), torch::kInt64).to(rij.device());
  return environment_matrix(rij.index_select(rij.dim() - 2, slots), part.rcut, part.rcut_smth);
}

}  // namespace deepkf
