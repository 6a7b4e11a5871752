#pragma once
// Frames to evaluate, for the commands that score or refit on stored frames (`deepkf uncertainty`,
// `deepkf model-devi`, `deepkf change-bias`): every system of every path under a model's type map, and LAMMPS
// dumps, whose frames carry their timesteps.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/FrameSource.hpp"

namespace deepkf {

struct FrameInputs {
  std::vector<FrameSubset> sets;
  std::vector<std::vector<std::int64_t>> timesteps;  // per set; empty for frames not from a dump
};

// paths: data paths as Dataset::load takes them, or LAMMPS dumps (elements of their types 1, 2, ... in
// dump_types). model_types: the element order to map every system to; model_origin names it in errors.
FrameInputs open_frames(const std::vector<std::string>& paths, const std::vector<std::string>& dump_types,
                        const std::vector<std::string>& model_types, const std::string& model_origin);

}  // namespace deepkf
