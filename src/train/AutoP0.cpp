#include "src/train/AutoP0.hpp"

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

double first_update_fraction(double p0, double g, std::int64_t blocks, double lambda) {
  const double x = p0 * g;
  return x / (static_cast<double>(blocks) * lambda + x);
}

P0Choice evaluate_p0(double p0, const GradientScales& g, std::int64_t blocks, double lambda) {
  P0Choice c;
  c.p0 = p0;
  c.g_energy = median(g.energy);
  c.g_force = median(g.force);
  c.f_energy = first_update_fraction(p0, c.g_energy, blocks, lambda);
  c.f_force = first_update_fraction(p0, c.g_force, blocks, lambda);
  return c;
}

P0Choice choose_p0(const GradientScales& g, std::int64_t blocks, double lambda) {
  const double ge = median(g.energy), gf = median(g.force);
  if (!(ge > 0.0) && !(gf > 0.0))
    throw OptimError("automatic p0: every measurement of the first batches has a zero gradient");
  // The odds f / (1 - f) of the first update of a kind are p0 g / (L lambda). p0 = L lambda / sqrt(g_e g_f)
  // makes the energy's odds sqrt(g_e / g_f) and the forces' their inverse: on a log scale the energy update
  // is as much above even odds as the force update is below. With one kind of measurement: even odds.
  const double g_mean = ge > 0.0 && gf > 0.0 ? std::sqrt(ge * gf) : std::max(ge, gf);
  const double p0 = static_cast<double>(blocks) * lambda / g_mean;
  return evaluate_p0(p0, g, blocks, lambda);
}

std::string P0Choice::describe(bool automatic) const {
  std::string line = fmt::format("p0 {:.4g}{}: the first updates remove {:.0f}% of an energy error", p0,
                                 automatic ? " (automatic)" : "", 100.0 * f_energy);
  if (g_force > 0.0) line += fmt::format(" and {:.0f}% of a force error", 100.0 * f_force);
  return line + fmt::format(" (|h|^2 energy {:.3g}, force {:.3g})", g_energy, g_force);
}

}  // namespace deepkf
