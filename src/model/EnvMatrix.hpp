#pragma once
// The smooth environment matrix of se_e2_a and the pair vectors it is built from.
#include <torch/types.h>

#include <cstddef>
#include <utility>

namespace deepkf {

struct ModelConfig;

// Pair vectors r_ij = x_j + shift_ij - x_i (A) for every slot of the neighbour list.
//   coord: nframes x nall x 3 (A); nlist: nframes x nloc x nnei (int64 index into nall, -1 empty);
//   shift: nframes x nloc x nnei x 3 (A) or undefined (= zero). Centres are the first nloc atoms.
// Returns nframes x nloc x nnei x 3 in coord's dtype. Empty slots get the vector (2 rcut, 0, 0), which lies
// beyond the cutoff: its environment row is exactly zero and its gradient exactly zero.
torch::Tensor pair_vectors(const torch::Tensor& coord, const torch::Tensor& nlist, const torch::Tensor& shift,
                           double rcut);

// The unnormalised environment matrix R~ of every slot, rows (s, s x/r, s y/r, s z/r) with s = w(r)/r.
//   rij: ... x 3 (A) -> ... x 4 (1/A). Slots at or beyond rcut give zero rows.
torch::Tensor environment_matrix(const torch::Tensor& rij, double rcut, double rcut_smth);

// The switch w(r) = u^3 (-6 u^2 + 15 u - 10) + 1 of every slot, and r = |r_ij|: rij ... x 3 (A) -> two
// tensors ... x 1. w is 0 at and beyond rcut (empty slots included).
std::pair<torch::Tensor, torch::Tensor> switch_weight(const torch::Tensor& rij, double rcut,
                                                      double rcut_smth);

// R~ of descriptor k of `mc` (descriptor_parts order) from the pair vectors of mc's neighbour list
// (... x nnei x 3): a hybrid's part reads its own slots (ModelConfig::part_slots) with its own rcut and
// rcut_smth; a single descriptor, all slots. Returns ... x nnei_k x 4.
torch::Tensor part_environment(const torch::Tensor& rij, const ModelConfig& mc, std::size_t k);

}  // namespace deepkf
