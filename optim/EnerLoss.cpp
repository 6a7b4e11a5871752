#include "optim/EnerLoss.hpp"

#include <torch/torch.h>

#include <string>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

void check_pair(const char* what, const torch::Tensor& pred, const torch::Tensor& ref) {
  if (!ref.defined()) throw OptimError(std::string("ener loss: ") + what + " has no reference");
  if (pred.numel() != ref.numel() || pred.size(0) != ref.size(0)) {
    throw OptimError(std::string("ener loss: ") + what + " prediction has " + std::to_string(pred.numel()) +
                     " values, reference has " + std::to_string(ref.numel()));
  }
}

}  // namespace

torch::Tensor ener_loss(const torch::Tensor& energy, const torch::Tensor& energy_ref,
                        const torch::Tensor& force, const torch::Tensor& force_ref,
                        const torch::Tensor& virial, const torch::Tensor& virial_ref, std::int64_t natoms,
                        double pref_e, double pref_f, double pref_v) {
  if (natoms < 1) throw OptimError("ener loss: natoms is " + std::to_string(natoms));
  if (!energy.defined()) throw OptimError("ener loss: no energy prediction");
  check_pair("energy", energy, energy_ref);
  const double inv_n = 1.0 / static_cast<double>(natoms);
  auto loss = torch::zeros({}, energy.options());
  if (pref_e != 0.0) {
    // p_e (1/N) <dE^2>
    loss = loss +
           pref_e * inv_n * (energy - energy_ref.to(energy.options()).view(energy.sizes())).square().mean();
  }
  if (force.defined() && pref_f != 0.0) {
    check_pair("force", force, force_ref);
    // p_f <dF^2>
    loss = loss + pref_f * (force - force_ref.to(force.options()).view(force.sizes())).square().mean();
  }
  if (virial.defined() && pref_v != 0.0) {
    check_pair("virial", virial, virial_ref);
    // p_v (1/N) <dW^2>
    loss = loss +
           pref_v * inv_n * (virial - virial_ref.to(virial.options()).view(virial.sizes())).square().mean();
  }
  return loss;
}

double adam_prefactor(double start, double limit, double lr, double lr0) {
  // p(t) = p_limit + (p_start - p_limit) * lr(t) / lr_0
  return limit + (start - limit) * lr / lr0;
}

}  // namespace deepkf
