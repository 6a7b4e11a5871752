#pragma once
// LAMMPS text dumps (`dump ID GROUP atom|custom N FILE ...`), so that the frames of an MD exploration can be
// scored directly. A snapshot is
//   ITEM: TIMESTEP            the step number
//   ITEM: NUMBER OF ATOMS     N
//   ITEM: BOX BOUNDS [xy xz yz] B1 B2 B3     three lines "lo hi" (orthogonal) or "lo_bound hi_bound tilt"
//                                            (restricted triclinic; LAMMPS's rules turn them into the cell)
//   ITEM: ATOMS COLUMNS...    N lines
// Other ITEM sections (UNITS, TIME) are read or skipped. Columns used: id (required: atoms are put in id
// order, which a dump does not keep unless sorted), type (mapped to elements by a user type map) or element,
// and one coordinate triple: x y z, xu yu zu (unwrapped), xs ys zs or xsu ysu zsu (scaled by the cell).
// Periodic in all three directions (pp pp pp) or in none; coordinates in A (units metal or real; a dump
// that records other units is rejected). Dumps carry no DFT labels: the systems have no energy.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

struct LammpsDump {
  std::vector<System> systems;                       // energy, force and virial empty
  std::vector<std::vector<std::int64_t>> timesteps;  // per system, each frame's step number
  bool cut_short = false;  // DumpEnd::kMayBeCut: the file ended inside its last snapshot, which is left out
};

// How a dump may end. kComplete: every snapshot whole (a finished run's file; the default). kMayBeCut: the
// file may end anywhere inside its last snapshot (a run still writing it, or stopped): that snapshot is left
// out and a file without a complete snapshot gives no systems; a malformed line before the file's last one
// is still an error.
enum class DumpEnd { kComplete, kMayBeCut };

// Whether `path` is a regular file whose first non-blank line is "ITEM: TIMESTEP".
bool is_lammps_dump(const std::string& path);

// Reads every snapshot of a text dump. type_elements: the element of LAMMPS type 1, 2, ... (as in
// `pair_coeff * * O H`); may be empty when the dump has an element column. Snapshots with the same
// elements in id order and the same periodicity form one system (in order of first appearance), whose type
// map lists its elements in order of first appearance; its source is the path, with ":K" appended for
// the K-th system (K >= 1) when there are several. Throws DataError naming the file, line, item and value
// for a malformed or truncated snapshot, a missing column, a type without an element, a repeated atom
// id, partial periodicity, a singular cell, or units other than metal and real.
LammpsDump read_lammps_dump(const std::string& path, const std::vector<std::string>& type_elements,
                            DumpEnd end = DumpEnd::kComplete);

}  // namespace deepkf
