#pragma once
// A small many-body potential for the optimizer tests, so that the Kalman filter sees gradients of the
// three kinds of measurement the trainer makes (energy, force groups, virial) without the model library:
//   E = sum_i MLP(d_i),  d_i = (sum_j exp(-r_ij^2), sum_j r_ij^2 exp(-r_ij^2))  over the other atoms j,
//   F = -dE/dx (autograd, with the graph kept for the weights' gradient),  W = -sum_i x_i (x) F_i.
// MLP: 2 -> 8 -> 8 -> 1, tanh, weights [in, out] as the model stores them: 105 parameters in 6 tensors.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "optim/KalmanMeasurement.hpp"

namespace deepkf::test {

struct ToyPotential {
  std::vector<torch::Tensor> params;

  explicit ToyPotential(std::uint64_t seed) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const std::vector<std::vector<std::int64_t>> shapes = {{2, 8}, {8}, {8, 8}, {8}, {8, 1}, {1}};
    for (const auto& s : shapes)
      params.push_back((0.5 * at::randn(s, gen, torch::kFloat64)).requires_grad_());
  }

  struct Output {
    torch::Tensor energy;  // [B]
    torch::Tensor force;   // [B, N, 3]
    torch::Tensor virial;  // [B, 9]
  };

  // x: positions [B, N, 3]. With `graph`, the outputs keep the graph to the parameters.
  Output evaluate(const torch::Tensor& x_in, bool graph = true) const {
    auto x = x_in.detach().clone().requires_grad_(true);
    const auto diff = x.unsqueeze(2) - x.unsqueeze(1);  // [B, N, N, 3]
    const auto r2 = diff.pow(2).sum(-1) + 1e3 * torch::eye(x.size(1), x.options()).unsqueeze(0);  // no self
    const auto g = torch::exp(-r2);
    const auto d = torch::stack({g.sum(-1), (r2 * g).sum(-1)}, -1);  // [B, N, 2]
    auto hdn = torch::tanh(d.matmul(params[0]) + params[1]);
    hdn = torch::tanh(hdn.matmul(params[2]) + params[3]);
    const auto energy = (hdn.matmul(params[4]) + params[5]).sum({1, 2});  // [B]
    const auto dEdx = torch::autograd::grad({energy.sum()}, {x}, {}, /*retain_graph=*/true,
                                            /*create_graph=*/graph)[0];
    const auto force = -dEdx;
    const auto virial = -(x.unsqueeze(-1) * force.unsqueeze(-2)).sum(1).reshape({x.size(0), 9});
    return {energy, force, virial};
  }
};

// One measurement's innovation and gradient dy/dw, from the measurement functions the trainer uses.
struct MeasuredStep {
  double e;
  std::vector<torch::Tensor> grads;
};

inline MeasuredStep measured(const Measurement& m, const std::vector<torch::Tensor>& params) {
  auto grads = torch::autograd::grad({m.y}, params, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                     /*allow_unused=*/true);
  // A parameter y does not depend on (the last bias, for forces) has zero gradient.
  for (std::size_t t = 0; t < grads.size(); ++t)
    if (!grads[t].defined()) grads[t] = torch::zeros_like(params[t]);
  return {kalman_error(m.abs_sum, m.count, m.frames), grads};
}

// The measurement sequence of one training batch, each on the weights as the previous update left them:
// energy, then force groups of `groupsize` atoms, then the virial. `update(step)` applies one step.
template <typename Update>
void train_batch(const ToyPotential& model, const torch::Tensor& x, const ToyPotential::Output& ref,
                 std::int64_t groupsize, const Update& update) {
  const auto B = x.size(0), N = x.size(1);
  const auto natoms = torch::full({B}, static_cast<double>(N), torch::kFloat64);
  update(measured(energy_measurement(model.evaluate(x).energy, ref.energy, natoms, 1.0), model.params));
  for (std::int64_t first = 0; first + groupsize <= N; first += groupsize) {
    const auto f = model.evaluate(x).force.narrow(1, first, groupsize);
    update(measured(force_measurement(f, ref.force.narrow(1, first, groupsize), natoms, 1.0), model.params));
  }
  update(measured(virial_measurement(model.evaluate(x).virial, ref.virial, natoms, 1.0), model.params));
}

// Training data labelled by a teacher potential (seed 99): 12 batches of 2 frames of 6 atoms, positions
// 1.2 x standard normal from a generator seeded 5.
struct TeacherData {
  std::vector<torch::Tensor> positions;
  std::vector<ToyPotential::Output> labels;
};

inline TeacherData teacher_data() {
  const ToyPotential teacher(99);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  TeacherData d;
  for (int b = 0; b < 12; ++b) {
    d.positions.push_back(1.2 * at::randn({2, 6, 3}, gen, torch::kFloat64));
    auto out = teacher.evaluate(d.positions.back(), false);
    d.labels.push_back({out.energy.detach(), out.force.detach(), out.virial.detach()});
  }
  return d;
}

}  // namespace deepkf::test
