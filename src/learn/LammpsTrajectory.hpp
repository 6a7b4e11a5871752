#pragma once
// The frames an exploration run dumped: a LAMMPS text dump (`dump custom` with columns id, type, x, y, z in
// any order, sorted or not; orthogonal or triclinic boxes). A minimal reader for what the loop's own input
// scripts write (LammpsInput.hpp), kept inside the learning layer.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

struct ExploredFrames {
  std::vector<std::int64_t> steps;  // timestep of each frame
  System frames;                    // periodic, frames in file order, atoms in atom-ID order, no labels
  bool truncated = false;  // the file ended inside a frame (a run that was stopped), which was left out
};

// Reads every complete frame of `path`. LAMMPS type t is element elements[t - 1]. Positions are Cartesian
// (A) relative to the box origin; the box rows are a = (xhi - xlo, 0, 0), b = (xy, yhi - ylo, 0),
// c = (xz, yz, zhi - zlo) from the (tilt-extended) bounds. Throws DataError naming the file and line for
// anything else: a frame whose atoms or types differ from the first's, a type outside elements, a missing
// column, a non-number.
ExploredFrames read_explored_frames(const std::string& path, const std::vector<std::string>& elements);

}  // namespace deepkf
