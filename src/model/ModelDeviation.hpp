#pragma once
// Model deviation between an ensemble of models (DeePMD-kit's definitions): what pair_style deepkf writes to
// model_devi.out and what `deepkf uncertainty -m A -m B ...` reports for the same frames. Plain C++, no
// LAMMPS and no LibTorch.
#include <array>
#include <cstddef>
#include <limits>
#include <vector>

namespace deepkf {

// Per-atom force deviation. forces: natoms x nmodels x 3 (eV/A), atom-major. Returns natoms values (eV/A):
//   eps_i = sqrt( (1/K) sum_k |F_ik - <F_i>|^2 ),  <F_i> = (1/K) sum_k F_ik
// With relative_level >= 0 each value is divided by |<F_i>| + relative_level (dimensionless), as DeePMD-kit's
// "relative" option does; a negative relative_level leaves the absolute deviation. With `reference`
// (natoms x 3, the labels) the deviation is taken from it instead of the mean, and the relative magnitude is
// |F_i^ref|: DeePMD-kit's "real error", sqrt((1/K) sum_k |F_ik - F_i^ref|^2).
std::vector<double> force_deviation(const double* forces, std::size_t natoms, std::size_t nmodels,
                                    double relative_level = -1.0, const double* reference = nullptr);

// Virial deviation per component. virials: nmodels x 9 (eV). Returns 9 values (eV / atom):
//   sigma_ab = sqrt( (1/K) sum_k (W_k,ab - <W_ab>)^2 ) / natoms
// With relative_level >= 0 each is divided by |<W>| / natoms + relative_level, |<W>| the norm of the mean
// virial's 9 components (DeePMD-kit's "relative_v"; the level in eV / atom).
// With `reference` (9 values, eV) the deviation is taken from it and |<W>| becomes |W^ref|, as for forces.
std::array<double, 9> virial_deviation(const double* virials, std::size_t nmodels, double natoms,
                                       double relative_level = -1.0, const double* reference = nullptr);

// Maximum, minimum and sum of deviation values, mergeable over the atoms of several ranks (the plugin
// reduces each field over MPI). An empty set has max 0 and min +inf; model_devi.out prints min 0 for it.
struct DeviationExtremes {
  double max = 0.0;
  double min = std::numeric_limits<double>::infinity();
  double sum = 0.0;
  double count = 0.0;

  void add(const std::vector<double>& values);
  // The mean, or 0 without values; min() as model_devi.out prints it (0 without values).
  double mean() const { return count > 0 ? sum / count : 0.0; }
  double printed_min() const { return count > 0 ? min : 0.0; }
};

// One row of model_devi.out without its step: max, min and mean over the 9 virial components of
// virial_deviation, and over the atoms of force_deviation.
struct ModelDeviationRow {
  double max_devi_v = 0.0, min_devi_v = 0.0, avg_devi_v = 0.0;
  double max_devi_f = 0.0, min_devi_f = 0.0, avg_devi_f = 0.0;
};

// The row from per-atom force deviations (their extremes over all atoms) and the 9 virial deviations:
// their max, min and root mean square (DeePMD-kit's avg_devi_v, sqrt(sum_ab sigma_ab^2 / 9)).
ModelDeviationRow deviation_row(const DeviationExtremes& force, const std::array<double, 9>& virial);

}  // namespace deepkf
