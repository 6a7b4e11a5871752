#pragma once
// B frames of one System as tensors ready for DeepPot and the losses (nall = nloc = natoms: periodic images
// enter through the neighbour list's shifts).
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "src/data/System.hpp"
#include "src/model/ModelConfig.hpp"

namespace deepkf {

struct Batch {
  torch::Tensor coord;   // B x natoms x 3 (A), dtype
  torch::Tensor atype;   // B x natoms (int64, model type index)
  torch::Tensor nlist;   // B x natoms x nnei (int64, -1 empty)
  torch::Tensor shift;   // B x natoms x nnei x 3 (A), dtype
  torch::Tensor box;     // B x 9 (A), undefined for a non-periodic system
  torch::Tensor energy;  // B (eV), undefined when the system has no energies (unlabelled frames)
  torch::Tensor force;   // B x natoms x 3 (eV/A), undefined when the system has no forces
  torch::Tensor virial;  // B x 9 (eV), undefined when the system has no virials
  std::int64_t natoms = 0;
  bool has_force = false;
  bool has_virial = false;
  std::vector<std::int64_t> frames;     // source frame indices in the System
  std::int64_t ndropped = 0;            // neighbours within rcut beyond sel, summed over frames and atoms
  std::vector<std::int64_t> max_count;  // per neighbour type, the most neighbours any centre had
};

// The types a neighbour list for `config` is built with (build_neighbor_list, sort_neighbors): the atoms'
// model types, or all 0 for a mixed-type descriptor, whose list holds the nearest sel[0] of any type.
std::vector<int> list_types(const ModelConfig& config, std::vector<int> types);

// Each slot's neighbour type in a list: atype (nframes x nall, int64) gathered by nlist (nframes x nloc x
// nnei), -1 on empty slots.
torch::Tensor slot_types(const torch::Tensor& atype, const torch::Tensor& nlist);

// The slots up to the last one any row fills: filled is rows x slots (bool) -> that slot's index + 1 (0
// when none is filled). The descriptors cut empty trailing slots with it where they add nothing.
std::int64_t filled_slots(const torch::Tensor& filled);

// Neighbour lists by build_neighbor_list with config.rcut and config.sel (and list_types); the System's types
// are mapped to the model's type_map by name. Throws DataError naming the system for a frame index out of
// range or an element missing from the model's type map.
Batch make_batch(const System& system, const std::vector<std::int64_t>& frames, const ModelConfig& config,
                 torch::Device device, torch::Dtype dtype);

// `b` with its geometry (coord, shift, box) in `dtype`, for a model of that precision; the labels keep
// theirs, so that errors against them keep their digits (RLEKF's measure_precision).
Batch geometry_in(const Batch& b, torch::Dtype dtype);

}  // namespace deepkf
