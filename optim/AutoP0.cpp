#include "optim/AutoP0.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0.0) || !std::isfinite(x); }),
          v.end());
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

double auto_noise(double g_kind, double g_energy) {
  if (!(g_kind > 0.0) || !(g_energy > 0.0)) return 1.0;
  return std::pow(g_kind / g_energy, kNoiseExponent);
}

double first_update_fraction(double p0, double g, std::int64_t blocks, double lambda, double rho) {
  const double x = p0 * g;
  return x / (rho * static_cast<double>(blocks) * lambda + x);
}

P0Choice evaluate_p0(double p0, const GradientScales& g, std::int64_t blocks, double lambda, double rho_force,
                     double rho_virial) {
  P0Choice c;
  c.p0 = p0;
  c.rho_force = rho_force;
  c.rho_virial = rho_virial;
  c.g_energy = median(g.energy);
  c.g_force = median(g.force);
  c.g_virial = median(g.virial);
  c.f_energy = first_update_fraction(p0, c.g_energy, blocks, lambda);
  c.f_force = first_update_fraction(p0, c.g_force, blocks, lambda, rho_force);
  c.f_virial = first_update_fraction(p0, c.g_virial, blocks, lambda, rho_virial);
  return c;
}

P0Choice choose_p0(const GradientScales& g, std::int64_t blocks, double lambda, double rho_force,
                   double rho_virial) {
  const double ge = median(g.energy), gf = median(g.force);
  if (!(ge > 0.0) && !(gf > 0.0))
    throw OptimError("automatic p0: every measurement of the first batches has a zero gradient");
  // The odds f / (1 - f) of the first update of a kind are p0 g / (L lambda). p0 = L lambda / sqrt(g_e g_f)
  // makes the energy's odds sqrt(g_e / g_f) and the forces' their inverse: on a log scale the energy update
  // is as much above even odds as the force update is below. With one kind of measurement: even odds.
  const double g_mean = ge > 0.0 && gf > 0.0 ? std::sqrt(ge * gf) : std::max(ge, gf);
  const double p0 = static_cast<double>(blocks) * lambda / g_mean;
  return evaluate_p0(p0, g, blocks, lambda, rho_force, rho_virial);
}

std::string P0Choice::describe(bool automatic) const {
  std::string line = fmt::format("p0 {:.4g}{}", p0, automatic ? " (automatic)" : "");
  if (g_force > 0.0 && rho_force != 1.0) line += fmt::format(", force noise {:.3g}", rho_force);
  if (g_virial > 0.0 && rho_virial != 1.0) line += fmt::format(", virial noise {:.3g}", rho_virial);
  line += fmt::format(": the first updates remove {:.0f}% of an energy error", 100.0 * f_energy);
  if (g_force > 0.0) line += fmt::format(", {:.0f}% of a force error", 100.0 * f_force);
  if (g_virial > 0.0) line += fmt::format(", {:.0f}% of a virial error", 100.0 * f_virial);
  line += fmt::format(" (|h|^2 energy {:.3g}, force {:.3g}", g_energy, g_force);
  if (g_virial > 0.0) line += fmt::format(", virial {:.3g}", g_virial);
  return line + ")";
}

}  // namespace deepkf
