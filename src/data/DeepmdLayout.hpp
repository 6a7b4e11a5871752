#pragma once
// The DeePMD system layout shared by npy folders and deepmd/hdf5 groups: type.raw, type_map.raw, an
// optional nopbc marker and set.NNN/{coord,box,energy,force,virial}.npy. Readers collect the raw arrays
// into a RawSystem; assemble_system checks them and concatenates the sets into a System.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

// One array as stored (any precision, converted to double).
struct RawArray {
  bool present = false;
  std::vector<std::int64_t> shape;
  std::vector<double> data;  // product(shape) values, row-major
};

// The frame arrays of one set.NNN.
struct RawSet {
  std::string where;  // for messages: "water/data_0/set.000" or "file.h5#/data_0/set.000"
  RawArray coord;     // nframes x 3 natoms (A)
  RawArray box;       // nframes x 9 (A); required unless the system is non-periodic
  RawArray energy;    // nframes or nframes x 1 (eV)
  RawArray force;     // nframes x 3 natoms (eV/A), optional
  RawArray virial;    // nframes x 9 (eV), optional
};

struct RawSystem {
  std::string source;                 // "water/data_0" or "file.h5#/data_0"
  bool has_types = false;             // type.raw was found
  std::vector<std::int64_t> types;    // natoms
  std::vector<std::string> type_map;  // empty when there is no type_map.raw
  bool periodic = true;
  std::vector<RawSet> sets;  // in set-name order
};

// Checks shapes, presence of the required arrays (type.raw, coord, energy, box unless nopbc), finiteness,
// atom types against the type map and every box (Cell::validate), then concatenates the sets. A missing
// type map is named Type_0, Type_1, ... as dpdata does. Throws DataError naming the source, set, array,
// frame and atom.
System assemble_system(RawSystem raw);

// The sets of `system` cut into chunks of at most set_size frames, ready for a writer.
std::vector<RawSet> split_into_sets(const System& system, std::int64_t set_size);

}  // namespace deepkf
