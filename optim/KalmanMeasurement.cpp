#include "optim/KalmanMeasurement.hpp"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

std::string shape_string(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// Shared shape of all three measurements: pred and ref [B, ...], natoms [B]; d = pref (ref - pred) / N;
// y = sum(sign(d) * pref * pred / N) / per_frame, with per_frame = 1 for energies and the number of
// components per frame for forces and virials.
Measurement measure(const char* what, const torch::Tensor& pred, const torch::Tensor& ref,
                    const torch::Tensor& natoms, double pref, bool divide_by_components) {
  if (!pred.defined() || !ref.defined() || !natoms.defined()) {
    throw OptimError(std::string(what) + " measurement: prediction, reference or natoms is undefined");
  }
  if (pred.sizes() != ref.sizes()) {
    throw OptimError(std::string(what) + " measurement: prediction has shape " + shape_string(pred) +
                     ", reference has " + shape_string(ref));
  }
  if (pred.dim() < 1 || natoms.dim() != 1 || natoms.size(0) != pred.size(0)) {
    throw OptimError(std::string(what) + " measurement: natoms has shape " + shape_string(natoms) +
                     ", expected [" + (pred.dim() ? std::to_string(pred.size(0)) : std::string("B")) + "]");
  }
  Measurement m;
  m.frames = pred.size(0);
  m.count = pred.numel();
  if (m.count == 0) return m;
  const auto per_frame = m.count / m.frames;
  // Broadcast N over the components of each frame.
  std::vector<int64_t> nshape(static_cast<std::size_t>(pred.dim()), 1);
  nshape[0] = m.frames;
  // d_c = pref (ref_c - pred_c) / N, s_c = sign(d_c); d in the wider of the two precisions, so that a
  // float32 prediction of float64 labels (measure_precision) keeps the labels' digits.
  const auto wide = torch::promote_types(ref.scalar_type(), pred.scalar_type());
  const auto n_wide = natoms.to(pred.device(), wide).view(nshape);
  const auto n = n_wide.to(pred.scalar_type());
  const auto d = pref * (ref.to(pred.device(), wide) - pred.detach().to(wide)) / n_wide;
  const auto s = torch::sign(d).to(pred.scalar_type());
  m.abs_sum = d.abs().sum().item<double>();
  // y = sum_c s_c pref pred_c / N  (/ components per frame for forces and virials)
  auto y = (s * pref * pred / n).sum();
  m.weights = s * pref / n;
  if (divide_by_components) {
    y = y / static_cast<double>(per_frame);
    m.weights = m.weights / static_cast<double>(per_frame);
  }
  m.y = y;
  return m;
}

}  // namespace

Measurement energy_measurement(const torch::Tensor& energy, const torch::Tensor& energy_ref,
                               const torch::Tensor& natoms, double pref) {
  if (energy.defined() && energy.dim() != 1) {
    throw OptimError("energy measurement: energy has shape " + shape_string(energy) + ", expected [B]");
  }
  return measure("energy", energy, energy_ref, natoms, pref, false);
}

Measurement force_measurement(const torch::Tensor& force, const torch::Tensor& force_ref,
                              const torch::Tensor& natoms, double pref) {
  if (force.defined() && (force.dim() != 3 || force.size(2) != 3)) {
    throw OptimError("force measurement: force has shape " + shape_string(force) + ", expected [B, g, 3]");
  }
  return measure("force", force, force_ref, natoms, pref, true);
}

Measurement virial_measurement(const torch::Tensor& virial, const torch::Tensor& virial_ref,
                               const torch::Tensor& natoms, double pref) {
  if (virial.defined() && virial.numel() != virial.size(0) * 9) {
    throw OptimError("virial measurement: virial has shape " + shape_string(virial) +
                     ", expected [B, 9] or [B, 3, 3]");
  }
  return measure("virial", virial, virial_ref, natoms, pref, true);
}

double kalman_error(double abs_sum, std::int64_t count, std::int64_t frames) {
  if (count <= 0 || frames <= 0) {
    throw OptimError("kalman error: " + std::to_string(count) + " components in " + std::to_string(frames) +
                     " frames; a measurement needs at least one");
  }
  // e = sqrt(B) * mean_c |d_c|
  return std::sqrt(static_cast<double>(frames)) * abs_sum / static_cast<double>(count);
}

double kalman_prefactor(double start, double limit, double fraction) {
  if (start == 0.0 && limit == 0.0) return 0.0;
  if (!(start > 0.0) || !(limit > 0.0)) {
    throw ConfigError("kalman prefactor schedule: start " + std::to_string(start) + " and limit " +
                      std::to_string(limit) +
                      " must both be positive (or both zero) for p_start (p_limit / p_start)^(t/T)");
  }
  // p(t) = p_start * (p_limit / p_start)^(t / T)
  return start * std::pow(limit / start, fraction);
}

}  // namespace deepkf
