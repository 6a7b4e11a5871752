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

// |h|^2 of each measurement of the first batches (energy; force groups; virial).
struct GradientScales {
  std::vector<double> energy;
  std::vector<double> force;
  std::vector<double> virial = {};
};

// The measurement noise of forces and virials (docs/rlekf.md, "Measurement noise"). Every measurement's
// noise is L lambda (the scalar step's a = L lambda + h^T P h) times a relative noise rho: 1 for energies,
// rho_f and rho_v for forces and virials, applied by scaling the measurement (y and e by 1 / sqrt(rho)).
// "auto" takes rho = (g / g_e)^kNoiseExponent with g the kind's typical |h|^2: with the automatic p0 the
// first force update then has odds (g_e / g_f)^(kNoiseExponent - 1/2) (measured choice, docs/rlekf.md).
constexpr double kNoiseExponent = 0.5;
double auto_noise(double g_kind, double g_energy);

struct P0Choice {
  double p0 = 1.0;
  double rho_force = 1.0, rho_virial = 1.0;              // relative noise of force and virial measurements
  double g_energy = 0.0, g_force = 0.0, g_virial = 0.0;  // the typical |h|^2 of each kind (median; 0: none)
  double f_energy = 0.0, f_force = 0.0, f_virial = 0.0;  // fraction of an error a first update removes
  // "p0 264 (automatic): the first updates remove 100% of an energy error and 0% of a force error
  // (|h|^2 energy 15.1, force 1.46e-05)"
  std::string describe(bool automatic) const;
};

// Fraction removed by the first update of a measurement with |h|^2 = g and relative noise rho:
// p0 g / (rho blocks lambda + p0 g).
double first_update_fraction(double p0, double g, std::int64_t blocks, double lambda, double rho = 1.0);

// The fractions p0 and the noise give (kept as they are).
P0Choice evaluate_p0(double p0, const GradientScales& g, std::int64_t blocks, double lambda,
                     double rho_force = 1.0, double rho_virial = 1.0);
// The automatic p0 (noise as given). OptimError when no measurement has a non-zero gradient.
P0Choice choose_p0(const GradientScales& g, std::int64_t blocks, double lambda, double rho_force = 1.0,
                   double rho_virial = 1.0);

}  // namespace deepkf
