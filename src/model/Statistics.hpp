#pragma once
// Data statistics of a DeepPot-SE model, kept as sums so that they can be accumulated over many batches and
// systems and summed over ranks (pack() -> allreduce -> unpack()):
//  - davg/dstd of the environment matrix per centre type (padding slots counted as zero rows):
//      davg = (mean of column 0, 0, 0, 0), dstd = (std of column 0, pooled std of columns 1..3 x3),
//      std = sqrt(max(E[x^2] - E[x]^2, 0)) floored at 1e-2;
//  - the per-type energy bias: least squares of frame energies on per-type atom counts.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

struct Batch;
struct ModelConfig;

struct EnergyBias {
  torch::Tensor bias;                 // ntypes (eV), float64, CPU
  std::vector<std::string> warnings;  // e.g. a type absent from the data
};

struct StatisticsSums {
  int ntypes = 0;
  // per centre type: number of (atom, slot) rows, sums of column 0 and its square, sums over columns 1..3
  // and their squares
  std::vector<double> rows, sum0, sumsq0, sum123, sumsq123;
  // normal equations of the energy fit: A^T A (ntypes x ntypes, row-major) and A^T y (ntypes), where a row
  // of A holds one frame's per-type atom counts and y its energy (eV)
  std::vector<double> ata, aty;
  double nframes = 0.0;

  explicit StatisticsSums(int ntypes_ = 0);

  // env: nframes x nloc x nnei x 4 (the unnormalised R~, 1/A); centre_types: nframes x nloc (int64).
  void add_environment(const torch::Tensor& env, const torch::Tensor& centre_types);
  // energy: nframes (eV); atom_types: nframes x natoms (int64). per_atom: the frame's row of A and its y
  // are divided by its atom count, so that the fit minimises the squared error per atom (each frame
  // weighs the same whatever its size) instead of the squared error of the total energy.
  void add_energy(const torch::Tensor& energy, const torch::Tensor& atom_types, bool per_atom = false);
  // Both of the above for one batch: R~ from its neighbour lists with config's rcut and rcut_smth.
  void add_batch(const Batch& batch, const ModelConfig& config);
  // this += other (same ntypes).
  void merge(const StatisticsSums& other);
  // All sums in one vector (for an allreduce) and back.
  std::vector<double> pack() const;
  void unpack(const std::vector<double>& values);

  // davg, dstd: ntypes x nnei x 4 (float64, CPU), the same values in every slot of a centre type. A type
  // with no centres gets davg 0, dstd 1.
  std::pair<torch::Tensor, torch::Tensor> descriptor_statistics(std::int64_t nnei) const;
  // Whether the energies added so far hold any atom of type t.
  bool has_atoms_of(int t) const;
  // Minimum-norm least-squares solution of A b = y; types with no atoms get 0 and a warning.
  EnergyBias energy_bias(const std::vector<std::string>& type_map) const;
};

// Environment sums of every descriptor of `mc` (descriptor_parts order; one for a single descriptor), and
// the model's davg, dstd from them: each descriptor's rows one after the other, ntypes x
// mc.statistics_slots() x 4 (float64, CPU).
std::vector<StatisticsSums> descriptor_sums(const ModelConfig& mc);
//   rij: nframes x nloc x nnei x 3 (pair_vectors with mc.rcut); centre_types: nframes x nloc (int64).
void add_environments(std::vector<StatisticsSums>& sums, const torch::Tensor& rij,
                      const torch::Tensor& centre_types, const ModelConfig& mc);
std::pair<torch::Tensor, torch::Tensor> descriptor_statistics(const std::vector<StatisticsSums>& sums,
                                                              const ModelConfig& mc);

// The closest neighbour of each (centre type, neighbour type) pair in a batch: ntypes x ntypes distances
// (A, centre-major; +inf where the batch has no such pair within rcut), for TrainingRange::add.
//   rij: nframes x nloc x nnei x 3 (pair_vectors); nlist: nframes x nloc x nnei (-1 empty); centre_types:
//   nframes x nloc (int64). Slots are grouped by neighbour type as config.sel.
std::vector<double> closest_neighbours(const torch::Tensor& rij, const torch::Tensor& nlist,
                                       const torch::Tensor& centre_types, const ModelConfig& config);

}  // namespace deepkf
