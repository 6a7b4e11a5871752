#pragma once
// The automatic initial covariance P = p0 I (docs/rlekf.md, "Automatic p0"). With P = p0 I and L blocks, the
// first Kalman update of a measurement whose gradient is h removes the fraction
//   f = p0 |h|^2 / (L lambda + p0 |h|^2)
// of its error (the innovation after the update, to first order, is (1 - f) e); its odds f / (1 - f) are
// p0 |h|^2 / (L lambda). Energy and force measurements differ by orders of magnitude in |h|^2 (the force
// measurement is divided by N g 3), so no single p0 gives both even odds: choose_p0 takes
// p0 = L lambda / sqrt(g_e g_f), with g the median |h|^2 of each kind over the first batches at the initial
// weights, which puts the two kinds' odds symmetrically about even odds on a log scale, whatever the atoms
// per frame, the batch size and the model size.
#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

// |h|^2 of each measurement of the first batches (energy; force groups).
struct GradientScales {
  std::vector<double> energy;
  std::vector<double> force;
};

struct P0Choice {
  double p0 = 1.0;
  double g_energy = 0.0, g_force = 0.0;  // the typical |h|^2 of each kind (median; 0 when none)
  double f_energy = 0.0, f_force = 0.0;  // fraction of the error the first update of each kind removes
  // "p0 264 (automatic): the first updates remove 100% of an energy error and 0% of a force error
  // (|h|^2 energy 15.1, force 1.46e-05)"
  std::string describe(bool automatic) const;
};

// Fraction removed by the first update of a measurement with |h|^2 = g: p0 g / (blocks lambda + p0 g).
double first_update_fraction(double p0, double g, std::int64_t blocks, double lambda);

// The fractions p0 gives (p0 kept as it is).
P0Choice evaluate_p0(double p0, const GradientScales& g, std::int64_t blocks, double lambda);
// The automatic choice. OptimError when no measurement has a non-zero gradient.
P0Choice choose_p0(const GradientScales& g, std::int64_t blocks, double lambda);

}  // namespace deepkf
