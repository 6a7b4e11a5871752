#pragma once
// Test helpers for pair_style deepkf: water frames from the shared dataset, small saved models, LAMMPS data
// files, running the real lmp (optionally under mpiexec) and reading its dumps and thermo output.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/TestData.hpp"  // read_text

namespace deepkf::test {

// One periodic frame: natoms x 3 coordinates (A), types (water frames: 0 = O, 1 = H), box rows a b c (A,
// LAMMPS form: a along x, b in the xy plane).
struct Frame {
  std::vector<double> coord;
  std::vector<int> types;
  std::vector<double> box;
  std::int64_t natoms() const { return static_cast<std::int64_t>(types.size()); }
};

// Frame `index` of water/data_0 (skips the test when the dataset is absent), coordinates wrapped into the
// cell. With `tilt`, the cell is sheared to a triclinic one and the atoms keep their fractional coordinates.
Frame water_frame(int index, bool tilt);

// Writes a random DeepPot-SE model for O/H (rcut 6, sel 46/92, small nets, non-trivial statistics and
// energy bias) with the given seed to `path`.
void write_water_model(const std::string& path, std::int64_t seed, const std::string& descriptor = "se_e2_a");

// The model file `from`, compressed with the default table settings (deepkf compress), written to `to`.
void write_compressed_model(const std::string& from, const std::string& to);

// A model's energy, forces and virials on a frame, evaluated directly (deepkf's own periodic neighbour list,
// float64): what LAMMPS must reproduce.
struct Direct {
  double energy = 0;
  std::vector<double> atom_energy, force, virial, atom_virial;
};
Direct direct(const std::string& model_path, const Frame& frame);

// LAMMPS data file (atom_style atomic): frame type t becomes LAMMPS type t + 1 with mass masses[t]
// (default water's: 1 = O, 2 = H).
void write_data_file(const std::string& path, const Frame& frame,
                     const std::vector<double>& masses = {15.9994, 1.00794});

// The start of an input script on data.lmp (written by write_data_file): metal units, periodic, atomic.
constexpr const char* kReadDataSetup = R"(units metal
boundary p p p
atom_style atomic
atom_modify map yes
read_data data.lmp
)";

struct LammpsResult {
  int status = -1;     // exit status of lmp (or mpiexec)
  std::string output;  // screen output and log
};

// Runs `input` (an input script body; the plugin is loaded first) in `dir` on `np` ranks (1: no mpiexec).
LammpsResult run_lammps(const std::string& dir, const std::string& input, int np = 1);

// Runs the input script file `script` as shipped (it loads the plugin itself) in `dir` with `-var NAME VALUE`
// for each pair of `vars`.
LammpsResult run_lammps_script(const std::string& dir, const std::string& script,
                               const std::vector<std::pair<std::string, std::string>>& vars, int np = 1);

// Rows of the last snapshot of a text dump with `dump_modify sort id` (one vector of columns per atom).
std::vector<std::vector<double>> read_last_dump(const std::string& path);

// The thermo rows printed by `run` in the log text (lines that start with the step number), as numbers.
std::vector<std::vector<double>> thermo_rows(const std::string& output, int ncolumns);

}  // namespace deepkf::test
