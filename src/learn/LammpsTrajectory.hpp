#pragma once
// The frames an exploration run dumped, read by the data layer's LAMMPS dump reader (src/data/LammpsDump.hpp)
// with the rules of a run that may have been stopped: one system (the run's atoms), every frame periodic.
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

// Reads every complete frame of `path`. LAMMPS type t is element elements[t - 1], and the frames' type map
// is `elements`. Throws DataError naming the file (and line, for a malformed one) for a frame whose atoms or
// types differ from the first's, a box that is not periodic, or anything read_lammps_dump rejects.
ExploredFrames read_explored_frames(const std::string& path, const std::vector<std::string>& elements);

}  // namespace deepkf
