#pragma once
// One system: frames that share the same atoms (count, order and types), as in a DeePMD npy folder or one
// group of a deepmd/hdf5 file. Values are held in float64 whatever the file's precision.
#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

// Who the atoms of a system are and how many frames it has: the part a System (frames in memory) and a
// SystemInfo (a FrameSource's description, src/data/FrameSource.hpp) share.
struct SystemAtoms {
  std::string source;                 // where it was read from: "dir/data_0", "file.h5#/group", "md.xyz:H2O1"
  std::vector<std::string> type_map;  // element names; atom_types index into it
  std::vector<int> atom_types;        // natoms
  bool periodic = true;               // false for DeePMD's `nopbc` systems (box is then empty)
  std::int64_t nframes = 0;
  std::int64_t natoms = 0;
};

struct System : SystemAtoms {
  std::vector<double> coord;  // nframes x natoms x 3, Angstrom
  std::vector<double> box;    // nframes x 9, rows are the cell vectors a, b, c (Angstrom); empty if !periodic
  std::vector<double> energy;  // nframes, eV; empty for unlabelled frames (a LAMMPS dump)
  std::vector<double> force;   // nframes x natoms x 3, eV/Angstrom; empty when the data has no forces
  std::vector<double> virial;  // nframes x 9, eV, row-major; empty when the data has no virials

  bool has_force() const { return !force.empty(); }
  bool has_virial() const { return !virial.empty(); }
};

}  // namespace deepkf
