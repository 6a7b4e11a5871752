#include "optim/DifferenceGradients.hpp"

#include <torch/torch.h>

namespace deepkf {

namespace {

std::vector<torch::Tensor> zeros_like_all(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> z;
  for (const auto& p : params) z.push_back(torch::zeros_like(p));
  return z;
}

// h = -(G(displaced) - G) / eps
std::vector<torch::Tensor> difference(const std::vector<torch::Tensor>& G,
                                      const std::vector<torch::Tensor>& displaced, double eps) {
  std::vector<torch::Tensor> h;
  for (std::size_t k = 0; k < G.size(); ++k) h.push_back((G[k] - displaced[k]) / eps);
  return h;
}

// v -> v + eps v T^T over the last dimension, T [B, 3, 3] per frame (v [B, ..., 3]).
torch::Tensor strained(const torch::Tensor& v, const torch::Tensor& T, double eps) {
  const auto flat = v.reshape({v.size(0), -1, 3});
  return (flat + eps * flat.matmul(T.transpose(1, 2))).view(v.sizes());
}

}  // namespace

std::vector<torch::Tensor> energy_gradient(DeepPot& model, const Batch& b,
                                           const std::vector<torch::Tensor>& params,
                                           const torch::Tensor& coord, const torch::Tensor& shift) {
  const auto e = model->atomic_energy(coord, b.atype, b.nlist, shift).sum();
  auto g = torch::autograd::grad({e}, params, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                 /*allow_unused=*/true);
  for (std::size_t k = 0; k < g.size(); ++k)
    if (!g[k].defined()) g[k] = torch::zeros_like(params[k]);
  return g;
}

std::vector<torch::Tensor> force_gradient_by_difference(DeepPot& model, const Batch& b,
                                                        const std::vector<torch::Tensor>& params,
                                                        const std::vector<torch::Tensor>& G,
                                                        const torch::Tensor& atoms,
                                                        const torch::Tensor& weights) {
  const double largest = weights.abs().max().item<double>();
  if (!(largest > 0.0)) return zeros_like_all(params);  // every error zero: y does not depend on w
  // c: each weight on its atom's coordinate (an atom drawn twice carries both)
  const auto index = atoms.unsqueeze(-1).expand({-1, -1, 3});
  const auto c = torch::zeros_like(b.coord).scatter_add(1, index, weights.to(b.coord.options()));
  const double eps = kDifferenceStep / largest;
  return difference(G, energy_gradient(model, b, params, b.coord + eps * c, b.shift), eps);
}

std::vector<torch::Tensor> virial_gradient_by_difference(DeepPot& model, const Batch& b,
                                                         const std::vector<torch::Tensor>& params,
                                                         const std::vector<torch::Tensor>& G,
                                                         const torch::Tensor& weights) {
  const double largest = weights.abs().max().item<double>();
  if (!(largest > 0.0)) return zeros_like_all(params);
  // |T r| <= 3 max|t| rcut for a pair within the cutoff.
  const double eps = kDifferenceStep / (3.0 * largest * model->config().rcut);
  const auto T = weights.to(b.coord.options()).reshape({-1, 3, 3});
  // r_ij = x_j + s_ij - x_i: straining the coordinates and the shifts alike strains every pair vector.
  const auto shift = b.shift.defined() ? strained(b.shift, T, eps) : b.shift;
  return difference(G, energy_gradient(model, b, params, strained(b.coord, T, eps), shift), eps);
}

}  // namespace deepkf
