#pragma once
// Labels from a CP2K ENERGY_FORCE output (CP2K 2023, Quickstep): the total energy, the ATOMIC FORCES block
// and the printed stress tensor, converted to DeePMD's units and signs (data/README.md):
//   energy  E [eV]      = E [Ha] * 27.211386
//   force   F [eV/A]    = F [Ha/Bohr] * 51.42208      (CP2K prints F = -dE/dx)
//   virial  W [eV]      = V [A^3] * sigma [GPa] / 160.21766
// where sigma is CP2K's stress, positive when compressed, so that W = -dE/d(eps) for the cell h -> h (I +
// eps) (the sign tests/data_cp2k pins with finite strains).
#include <array>
#include <string>
#include <vector>

namespace deepkf {

constexpr double kEvPerHartree = 27.211386;
constexpr double kEvPerAngstromPerHartreePerBohr = 51.42208;
constexpr double kGpaPerEvPerA3 = 160.21766;

struct Cp2kLabels {
  double energy = 0.0;             // eV
  std::vector<double> force;       // natoms x 3, eV/A
  std::array<double, 9> virial{};  // eV, row-major
};

// Parses `text`, the output of one single point of the atoms `elements` (element of each atom, in input
// order) in a cell of volume `volume` (A^3). Throws DataError naming `source` and what is wrong: the run did
// not end (no "PROGRAM ENDED AT"), the SCF did not converge, not exactly one total energy, force block or
// stress tensor, a force row of another element or atom count, a value that is not a finite number.
Cp2kLabels parse_cp2k_output(const std::string& text, const std::vector<std::string>& elements, double volume,
                             const std::string& source);

}  // namespace deepkf
