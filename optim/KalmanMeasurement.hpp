#pragma once
// The scalar measurements of RLEKF (docs/rlekf.md, "Measurements of one batch"). Each function turns
// predictions and references of the local frames into
//   y     a scalar tensor with the autograd graph of the predictions (the trainer takes h = dy/dw),
//   abs_sum, count, frames   the pieces of the innovation e = sqrt(B) * mean |d| as sums,
// so that a data-parallel trainer can sum the pieces over ranks before forming e with kalman_error().
// The signs s = sign(d) are constants (no graph).
#include <torch/types.h>

#include <cstdint>

namespace deepkf {

struct Measurement {
  torch::Tensor y;  // scalar, with graph; undefined when the rank has no frames
  // dy/d(prediction), shaped like the prediction, without graph: s_c pref / N (/ components per frame). A
  // gradient taken without the prediction's graph (DifferenceGradients.hpp) starts from it.
  torch::Tensor weights;
  double abs_sum = 0.0;     // sum_c |d_c|
  std::int64_t count = 0;   // number of components c
  std::int64_t frames = 0;  // number of frames B
};

// Energy step. energy, energy_ref: [B] total energies (eV); natoms: [B] atoms per frame; pref: p_e.
//   d_k = p_e (E_k^ref - E_k) / N_k,  s_k = sign(d_k),  y = sum_k s_k p_e E_k / N_k,  count = B.
Measurement energy_measurement(const torch::Tensor& energy, const torch::Tensor& energy_ref,
                               const torch::Tensor& natoms, double pref);

// Force step for one group of selected atoms. force, force_ref: [B, g, 3] (eV/A) of the group's g atoms;
// natoms: [B]; pref: p_f.
//   d_c = p_f (F_c^ref - F_c) / N,  s_c = sign(d_c),  y = sum_c s_c p_f F_c / (N g 3),  count = 3 g B.
Measurement force_measurement(const torch::Tensor& force, const torch::Tensor& force_ref,
                              const torch::Tensor& natoms, double pref);

// Virial step. virial, virial_ref: [B, 9] or [B, 3, 3] (eV); natoms: [B]; pref: p_v.
//   d_c = p_v (W_c^ref - W_c) / N,  s_c = sign(d_c),  y = sum_c s_c p_v W_c / (9 N),  count = 9 B.
Measurement virial_measurement(const torch::Tensor& virial, const torch::Tensor& virial_ref,
                               const torch::Tensor& natoms, double pref);

// e = sqrt(B) * abs_sum / count, from the global (summed over ranks) pieces; OptimError when count <= 0.
double kalman_error(double abs_sum, std::int64_t count, std::int64_t frames);

// Kalman prefactor schedule p(t) = p_start * (p_limit / p_start)^(t / T); `fraction` = t / T.
// Both zero gives 0; ConfigError when only one is zero or either is negative.
double kalman_prefactor(double start, double limit, double fraction);

}  // namespace deepkf
