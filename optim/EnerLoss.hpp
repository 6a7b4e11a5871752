#pragma once
// DeePMD-kit's "ener" loss for the Adam baseline (docs/deep-potential.md, "Loss for the Adam baseline"):
//   L = p_e (1/N) <dE^2> + p_f <dF^2> + p_v (1/N) <dW^2>
// with <.> the mean over frames (energy), over all 3N force components of all frames, and over the 9
// virial components of all frames; N atoms per frame.
#include <torch/types.h>

#include <cstdint>

namespace deepkf {

// energy, energy_ref: [B] (eV); force, force_ref: [B, N, 3] (eV/A) or undefined to leave the term out;
// virial, virial_ref: [B, 9] or [B, 3, 3] (eV) or undefined; natoms: N. A term whose prefactor is 0 is
// left out. Returns a scalar with the graph of the predictions. Throws OptimError on shape mismatches.
torch::Tensor ener_loss(const torch::Tensor& energy, const torch::Tensor& energy_ref,
                        const torch::Tensor& force, const torch::Tensor& force_ref,
                        const torch::Tensor& virial, const torch::Tensor& virial_ref, std::int64_t natoms,
                        double pref_e, double pref_f, double pref_v);

// Adam prefactor schedule p(t) = p_limit + (p_start - p_limit) * lr(t) / lr_0.
double adam_prefactor(double start, double limit, double lr, double lr0);

}  // namespace deepkf
