#pragma once
// The atoms of the RLEKF force steps: for each frame, nselect atoms drawn uniformly with replacement,
// split into groups of groupsize (one Kalman step per group). Seeded and reproducible: raw
// std::mt19937_64 output mapped to [0, n) by deepkf::uniform_below (never a standard distribution, whose
// output differs between standard libraries). The generator state is saved and restored exactly.
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <random>
#include <vector>

namespace deepkf {

class AtomSelector {
 public:
  // ConfigError when nselect < 1 or groupsize < 1.
  AtomSelector(std::uint64_t seed, int nselect, int groupsize);

  // Draws for `nframes` frames of `natoms` atoms each. Returns ceil(nselect / groupsize) tensors of atom
  // indices, int64 [nframes, g] on `device`, g = groupsize (the last group takes the remainder when
  // groupsize does not divide nselect). Draws frame by frame, atom by atom.
  std::vector<torch::Tensor> select(std::int64_t nframes, std::int64_t natoms,
                                    torch::Device device = torch::kCPU);
  // Data parallel: draws for all `total_frames` frames of the global batch (so every rank's generator
  // advances alike) and returns the rows [first_frame, first_frame + nframes) of this rank's frames.
  std::vector<torch::Tensor> select(std::int64_t first_frame, std::int64_t nframes, std::int64_t total_frames,
                                    std::int64_t natoms, torch::Device device = torch::kCPU);

  int nselect() const { return nselect_; }
  int groupsize() const { return groupsize_; }
  int num_groups() const { return (nselect_ + groupsize_ - 1) / groupsize_; }

  // The generator state under "atom_selector" in the archive.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  int nselect_;
  int groupsize_;
  std::mt19937_64 rng_;
};

}  // namespace deepkf
