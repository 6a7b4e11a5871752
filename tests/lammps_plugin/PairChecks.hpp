#pragma once
// Checks shared by the pair_style deepkf tests: a LAMMPS run 0 against the direct C++ evaluation of the
// same model on the same frame, and the end of a short NVE trajectory.
#include <string>
#include <vector>

#include "tests/lammps_plugin/LammpsRunner.hpp"

namespace deepkf::test {

constexpr double kNktv2pMetal = 1.6021765e6;  // LAMMPS metal units: eV/A^3 -> bar
constexpr const char* kSetup = kReadDataSetup;

double max_abs(const std::vector<double>& v);
// Largest |a - b| relative to max |b|.
double rel_diff(const std::vector<double>& a, const std::vector<double>& b);
// "pair_style deepkf ARGS" and its pair_coeff for O and H.
std::string pair_lines(const std::string& style_args);
// run 0 with dumps of forces, per-atom energy and (centroid) per-atom virial, thermo pe and virial.
std::string run0_input(const std::string& style_args);
// A water model of `descriptor` (write_water_model, seed 11) on `frame` at `np` ranks: LAMMPS's energy,
// virial, forces, per-atom energies and virials against the direct evaluation (1e-8). With `compressed`,
// the model is compressed (deepkf compress defaults) before both evaluations.
void check_run0(const Frame& frame, int np, bool compressed = false,
                const std::string& descriptor = "se_e2_a");
// Final positions and velocities (rows: id x y z vx vy vz) of `steps` NVE steps from the frame in `dir`
// (data.lmp, model.pt) at `np` ranks; `extra` goes before the setup.
std::vector<std::vector<double>> trajectory_end(const std::string& dir, int np, int steps,
                                                const std::string& extra = "");
// Largest |a - b| over rows of equal length.
double max_row_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

}  // namespace deepkf::test
