#pragma once
// Weight gradients of force and virial measurements from energy gradients alone (RLEKF's force_gradient
// "difference"; docs/rlekf.md, "Force gradients by difference"). With F = -dE/dx and W = -sum_ij g_ij r_ij^T
// (g_ij = dE/dr_ij), a force measurement y = sum_c w_c F_c is -d/d(eps) E(x + eps c), c the displacement
// that puts each weight w_c on its atom's coordinate, and a virial measurement y = sum_ab t_ab W_ab is
// -d/d(eps) E with every pair vector strained as r -> r + eps T r (T = t as a 3 x 3 matrix per frame). So
//
//   h = dy/dw = -(G(displaced) - G) / eps,   G = d(sum_k E_k)/dw,
//
// one first-order pass (energy and its backward pass) per measurement, where the gradient through the
// forces' graph is a double backward. One-sided, with eps such that no atom (pair vector) moves by more
// than kDifferenceStep: on DeePMD-kit's water model in float64 h is within about 5e-6 (relative) of the
// graph's and costs 0.46 of it (docs/benchmarks.md, "Force gradients by difference").
#include <torch/types.h>

#include <vector>

#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

constexpr double kDifferenceStep = 1e-7;  // A

// d(sum_k E_k)/dw over `params` for the frames of b at coordinates `coord` and shifts `shift`, zeros for
// parameters the energy does not depend on.
std::vector<torch::Tensor> energy_gradient(DeepPot& model, const Batch& b,
                                           const std::vector<torch::Tensor>& params,
                                           const torch::Tensor& coord, const torch::Tensor& shift);

// h of the force measurement of the atoms `atoms` ([B, g], the frames' rows of b) whose weights are `weights`
// ([B, g, 3], Measurement::weights), from G at b's own coordinates.
std::vector<torch::Tensor> force_gradient_by_difference(DeepPot& model, const Batch& b,
                                                        const std::vector<torch::Tensor>& params,
                                                        const std::vector<torch::Tensor>& G,
                                                        const torch::Tensor& atoms,
                                                        const torch::Tensor& weights);

// h of the virial measurement whose weights are `weights` ([B, 9], row-major t_ab), from G at b's own
// coordinates.
std::vector<torch::Tensor> virial_gradient_by_difference(DeepPot& model, const Batch& b,
                                                         const std::vector<torch::Tensor>& params,
                                                         const std::vector<torch::Tensor>& G,
                                                         const torch::Tensor& weights);

}  // namespace deepkf
