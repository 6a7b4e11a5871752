#include "src/learn/LammpsTrajectory.hpp"

#include <fmt/format.h>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/LammpsDump.hpp"

namespace deepkf {

ExploredFrames read_explored_frames(const std::string& path, const std::vector<std::string>& elements) {
  LammpsDump dump = read_lammps_dump(path, elements, DumpEnd::kMayBeCut);
  ExploredFrames t;
  t.truncated = dump.cut_short;
  if (dump.systems.empty()) {
    t.frames.source = path;
    t.frames.type_map = elements;
    return t;
  }
  if (dump.systems.size() > 1)
    throw DataError(fmt::format(
        "LAMMPS dump {}: the frame at step {} has other atoms, types or periodicity than the first frame",
        path, dump.timesteps[1].front()));
  if (!dump.systems[0].periodic)
    throw DataError(fmt::format("LAMMPS dump {}: the box is not periodic in x, y and z", path));
  t.frames = std::move(dump.systems[0]);
  remap_types(t.frames, elements);  // the run's element order, whatever the order of first appearance
  t.steps = std::move(dump.timesteps[0]);
  return t;
}

}  // namespace deepkf
