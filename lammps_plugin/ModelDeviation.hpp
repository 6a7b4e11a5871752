#pragma once
// Model deviation between an ensemble of models (DeePMD-kit's definitions), used by pair_style deepkf to pick
// structures for active learning. Plain C++, no LAMMPS and no LibTorch.
#include <array>
#include <cstddef>
#include <vector>

namespace deepkf {

// Per-atom force deviation. forces: natoms x nmodels x 3 (eV/A), atom-major. Returns natoms values (eV/A):
//   eps_i = sqrt( (1/K) sum_k |F_ik - <F_i>|^2 ),  <F_i> = (1/K) sum_k F_ik
// With relative_level >= 0 each value is divided by |<F_i>| + relative_level (dimensionless), as DeePMD-kit's
// "relative" option does; a negative relative_level leaves the absolute deviation.
std::vector<double> force_deviation(const double* forces, std::size_t natoms, std::size_t nmodels,
                                    double relative_level = -1.0);

// Virial deviation per component. virials: nmodels x 9 (eV). Returns 9 values (eV / atom):
//   sigma_ab = sqrt( (1/K) sum_k (W_k,ab - <W_ab>)^2 ) / natoms
std::array<double, 9> virial_deviation(const double* virials, std::size_t nmodels, double natoms);

}  // namespace deepkf
