#pragma once
// The DeePMD system layout shared by npy folders and deepmd/hdf5 groups: type.raw, type_map.raw, an
// optional nopbc marker and set.NNN/{coord,box,energy,force,virial}.npy. Readers describe a system as a
// SystemLayout (arrays known by their shapes, rows read on demand); open_layout_system checks the shapes
// and returns a FrameSource that reads and checks frames when asked.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/data/System.hpp"

namespace deepkf {

// One array of a set as stored: its shape now, its rows when asked (any precision, as double).
class ArraySource {
 public:
  virtual ~ArraySource() = default;
  virtual const std::vector<std::int64_t>& shape() const = 0;
  // Rows [first, first + count) of the array (row = one frame), row-major, into out.
  virtual void read_rows(std::int64_t first, std::int64_t count, double* out) const = 0;
};

// The frame arrays of one set.NNN; a null array is absent.
struct SetLayout {
  std::string where;  // for messages: "water/data_0/set.000" or "file.h5#/data_0/set.000"
  std::shared_ptr<const ArraySource> coord;   // nframes x 3 natoms (A)
  std::shared_ptr<const ArraySource> box;     // nframes x 9 (A); required unless the system is non-periodic
  std::shared_ptr<const ArraySource> energy;  // nframes or nframes x 1 (eV)
  std::shared_ptr<const ArraySource> force;   // nframes x 3 natoms (eV/A), optional
  std::shared_ptr<const ArraySource> virial;  // nframes x 9 (eV), optional
  // real_atom_types.npy, nframes x natoms: DeePMD-kit's type_mix format (each frame's own atom types, -1 a
  // virtual atom; type.raw then only gives the atom count); optional, in every set or none (TypeMix.hpp)
  std::shared_ptr<const ArraySource> real_types;
};

struct SystemLayout {
  std::string source;                 // "water/data_0" or "file.h5#/data_0"
  bool has_types = false;             // type.raw was found
  std::vector<std::int64_t> types;    // natoms
  std::vector<std::string> type_map;  // empty when there is no type_map.raw
  bool periodic = true;
  std::vector<SetLayout> sets;  // in set-name order
};

// Checks the layout (type.raw, atom types against the type map, required arrays, shapes) and returns the
// system's frames in set order as a FrameSource; values are checked (finite, valid cells) as frames are
// read. A missing type map is named Type_0, Type_1, ... as dpdata does. Throws DataError naming the
// source, set, array and value.
std::shared_ptr<FrameSource> open_layout_system(SystemLayout layout);

// open_layout_system, and for a system in DeePMD-kit's type_mix format (sets with real_atom_types.npy)
// its frames split into ordinary systems by their atom types (split_type_mix, TypeMix.hpp).
std::vector<std::shared_ptr<FrameSource>> open_layout_systems(SystemLayout layout);

// One array held in memory (writers' input).
struct RawArray {
  bool present = false;
  std::vector<std::int64_t> shape;
  std::vector<double> data;  // product(shape) values, row-major
};

// The frame arrays of one set, in memory.
struct RawSet {
  std::string where;
  RawArray coord, box, energy, force, virial;
};

// The frames of `system` cut into sets of at most set_size frames, ready for a writer.
std::vector<RawSet> split_into_sets(const System& system, std::int64_t set_size);

}  // namespace deepkf
