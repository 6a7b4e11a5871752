#pragma once
// What an exploration run gives LAMMPS: the start structure as a data file (atom_style atomic) and the input
// script that runs MD with pair_style deepkf, dumping (and, with several models, scoring) every dump_freq
// steps.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

// A cell in LAMMPS's restricted triclinic form: a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz) with
// lx, ly, lz > 0 and every tilt reduced into [-l/2, l/2] by adding lattice vectors (the same lattice).
struct LammpsBox {
  double lx = 0, ly = 0, lz = 0, xy = 0, xz = 0, yz = 0;
  bool triclinic() const { return xy != 0.0 || xz != 0.0 || yz != 0.0; }
  std::array<double, 9> rows() const { return {lx, 0, 0, xy, ly, 0, xz, yz, lz}; }
};

// The rotation that takes the cell box9 (rows a, b, c) to LAMMPS's orientation: orthonormal rows u, v, w
// (u along a, v in the plane of a and b, w = u x v), a vector x becoming (x.u, x.v, x.w). Positions written
// by lammps_data_text and forces turn with it. Throws DataError naming `where` for a singular or
// left-handed cell.
std::array<double, 9> lammps_rotation(const double* box9, const std::string& where);

// The LAMMPS form of the cell box9 (rows a, b, c in A): the same lattice rotated so that a lies along x and b
// in the xy plane. Throws DataError naming `where` for a singular or left-handed cell.
LammpsBox lammps_box(const double* box9, const std::string& where);

// A LAMMPS data file of frame `frame` of `system` (periodic): LAMMPS type t + 1 is system.type_map[t] with
// mass masses[t] (g/mol); positions keep their fractional coordinates in the rotated cell and are wrapped
// into it. Throws DataError for a non-periodic system.
std::string lammps_data_text(const System& system, std::int64_t frame, const std::vector<double>& masses);

struct MdRun {
  std::string plugin;                 // libdeepkf_lammps.so
  std::vector<std::string> models;    // model files; with more than one, model_devi.out every dump_freq steps
  std::vector<std::string> elements;  // element of each LAMMPS type
  std::string data_file = "start.data";
  std::array<int, 3> replicate{1, 1, 1};
  std::string ensemble = "nvt";                             // or "npt"
  double temperature = 300.0;                               // K
  double pressure = 1.0;                                    // bar (npt)
  std::string barostat = "iso";                             // "iso", "aniso" or "tri" (npt)
  double thermostat_damping = 0.1, barostat_damping = 1.0;  // ps
  double timestep = 0.001;                                  // ps
  std::int64_t steps = 1000;
  int dump_freq = 10;
  std::int64_t velocity_seed = 1;  // 1 .. 2^31 - 1
};

// Files an MdRun writes in its folder.
constexpr const char* kTrajectoryFile = "traj.dump";
constexpr const char* kDeviationFile = "model_devi.out";

// The input script (units metal): reads data_file, sets velocities at the temperature, runs `steps` steps
// of NVT or NPT (Nose-Hoover), dumps id type x y z every dump_freq steps (step 0 included) to traj.dump.
std::string lammps_input_text(const MdRun& run);

}  // namespace deepkf
