// RlekfStep's measurements (docs/rlekf.md, "Measurements of one batch"): the energy, force groups and virial
// of this rank's frames on the current weights, with their noise, and with force_gradient "difference" the
// force and virial gradients taken by differences of energy gradients (DifferenceGradients.hpp) instead of
// through the forces' graph.
#include <torch/torch.h>

#include <cmath>

#include "optim/DifferenceGradients.hpp"
#include "optim/KalmanMeasurement.hpp"
#include "optim/RankSums.hpp"
#include "optim/RlekfStep.hpp"

namespace deepkf {

RlekfStep::Prefactors RlekfStep::prefactors(std::int64_t step) const {
  const double t = static_cast<double>(step) / static_cast<double>(numb_steps_);
  const auto& k = options_;
  return {kalman_prefactor(k.start_pref_e, k.limit_pref_e, t),
          kalman_prefactor(k.start_pref_f, k.limit_pref_f, t),
          kalman_prefactor(k.start_pref_v, k.limit_pref_v, t)};
}

torch::Tensor RlekfStep::natoms(const Batch& b) const {
  return torch::full(
      {b.coord.size(0)}, static_cast<double>(b.coord.size(1)),
      torch::TensorOptions().dtype(measured_->config().precision).device(params_.front().device()));
}

Measurement RlekfStep::energy_of(const StepInput& in, double pe, const torch::Tensor& local_energy) {
  Measurement sum;
  const auto add = [&](const Batch& b, const torch::Tensor& given) {
    if (b.coord.size(0) == 0) return;
    const auto energy =
        given.defined() ? given : measured_->atomic_energy(b.coord, b.atype, b.nlist, b.shift).sum(1);
    const Measurement m = energy_measurement(energy, b.energy, natoms(b), pe);
    sum.y = sum.y.defined() ? sum.y + m.y : m.y;
    sum.weights = sum.weights.defined() ? torch::cat({sum.weights, m.weights}) : m.weights;  // local first
    sum.abs_sum += m.abs_sum;
    sum.count += m.count;
    sum.frames += m.frames;
  };
  add(in.local, local_energy);
  for (const Batch& b : in.replay) add(b, torch::Tensor());
  return sum;
}

Measurement RlekfStep::force_of(const StepInput& in, const torch::Tensor& atoms, double pf) {
  const Batch& b = in.local;
  if (b.coord.size(0) == 0) return {};
  const auto out = measured_->evaluate(b.coord, b.atype, b.nlist, b.shift, EvalOptions::training());
  return force_of(b, out, atoms, pf);
}

Measurement RlekfStep::force_of(const Batch& b, const ModelOutput& out, const torch::Tensor& atoms,
                                double pf) const {
  const auto idx = atoms.unsqueeze(-1).expand({-1, -1, 3});
  return force_measurement(out.force.gather(1, idx), b.force.gather(1, idx), natoms(b), pf);
}

Measurement RlekfStep::virial_of(const StepInput& in, double pv) {
  const Batch& b = in.local;
  if (b.coord.size(0) == 0) return {};
  const auto out = measured_->evaluate(b.coord, b.atype, b.nlist, b.shift, EvalOptions::training());
  return virial_measurement(out.virial, b.virial, natoms(b), pv);
}

Measurement RlekfStep::with_noise(Measurement m, double rho) {
  // Noise rho L lambda is noise L lambda for the measurement y / sqrt(rho), with e / sqrt(rho). "auto" (0)
  // before prepare() chose it (a step taken without the probe) is no noise of its own: 1.
  if (rho == 1.0 || rho <= 0.0) return m;
  const double s = 1.0 / std::sqrt(rho);
  if (m.y.defined()) m.y = m.y * s;
  if (m.weights.defined()) m.weights = m.weights * s;
  m.abs_sum *= s;
  return m;
}

std::vector<torch::Tensor> RlekfStep::gradients(const Measurement& m) const {
  return measurement_gradients({m}, measured_params_, *comm_).front();
}

ModelOutput RlekfStep::evaluate_for_forces(const Batch& b, bool energy_gradient) {
  if (options_.force_gradient == "difference")
    return measured_->evaluate(b.coord, b.atype, b.nlist, b.shift, EvalOptions::with_energy_gradient());
  // Through the graph; an energy gradient from the same first backward pass saves the energy's own.
  EvalOptions o = EvalOptions::training();
  o.energy_gradient = energy_gradient;
  return measured_->evaluate(b.coord, b.atype, b.nlist, b.shift, o);
}

RlekfStep::Measured RlekfStep::energy_measured(const StepInput& in, double pe, const ModelOutput& out) {
  // Without an energy gradient: the graph of `out` (force_gradient "graph"), or the energies evaluated here.
  if (out.energy_gradient.empty()) return {energy_of(in, pe, out.energy), {}};
  // y = a E with a = s p_e / N, so h = a dE/dw, which the forces' pass gave.
  if (energy_from_forces_pass(in)) {
    Measured r{energy_of(in, pe, out.energy), {}};
    const double a = r.m.weights.flatten()[0].item<double>();
    for (const auto& g : out.energy_gradient) r.h.push_back(g * a);
    return r;
  }
  // Else the frames' own energy graph (the forces' pass kept none).
  return {energy_of(in, pe), {}};
}

RlekfStep::Measured RlekfStep::force_measured(const Batch& b, const ModelOutput& out,
                                              const torch::Tensor& atoms, double pf) {
  Measured r{with_noise(force_of(b, out, atoms, pf), options_.force_noise), {}};
  if (options_.force_gradient == "difference")
    r.h =
        force_gradient_by_difference(measured_, b, measured_params_, out.energy_gradient, atoms, r.m.weights);
  return r;
}

RlekfStep::Measured RlekfStep::force_measured(const StepInput& in, const torch::Tensor& atoms, double pf) {
  if (in.local.coord.size(0) == 0) return {};
  return force_measured(in.local, evaluate_for_forces(in.local), atoms, pf);
}

RlekfStep::Measured RlekfStep::virial_measured(const Batch& b, const ModelOutput& out, double pv) {
  Measured r{with_noise(virial_measurement(out.virial, b.virial, natoms(b), pv), options_.virial_noise), {}};
  if (options_.force_gradient == "difference")
    r.h = virial_gradient_by_difference(measured_, b, measured_params_, out.energy_gradient, r.m.weights);
  return r;
}

RlekfStep::Measured RlekfStep::virial_measured(const StepInput& in, double pv) {
  if (in.local.coord.size(0) == 0) return {};
  return virial_measured(in.local, evaluate_for_forces(in.local), pv);
}

SummedMeasurements RlekfStep::sum_measured(std::vector<Measured> measured,
                                           const std::vector<std::int64_t>& frames) {
  std::vector<Measurement> ms;
  LocalGradients given;
  for (auto& x : measured) {
    ms.push_back(std::move(x.m));
    given.push_back(std::move(x.h));
  }
  return sum_measurements(ms, frames, measured_params_, *comm_, std::move(given));
}

}  // namespace deepkf
