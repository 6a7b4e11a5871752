#pragma once
// A model file as a potential: frames in, energies, forces and virials (and per-atom values) out, in float64
// whatever the model's precision. The inference entry point of every caller outside training: the Python
// module's DeepPot (coordinates it holds), pair_style deepkf (atoms with the neighbour candidates LAMMPS
// found), `deepkf test` and the ensemble's model deviation (frames of stored systems, labelled or not).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/System.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf {

// nframes frames of the same natoms atoms.
struct PotentialFrames {
  std::int64_t nframes = 0;
  std::int64_t natoms = 0;
  std::vector<double> coord;    // nframes x natoms x 3 (A)
  std::vector<double> box;      // nframes x 9, rows the cell vectors a, b, c (A); empty: not periodic
  std::vector<int> atom_types;  // natoms, indices into the model's type map
};

struct PotentialOptions {
  bool atomic = false;  // also the per-atom energies and virials
  // Atoms evaluated together (frames are grouped up to this many atoms; at least one frame per group).
  std::int64_t atoms_per_group = 4096;
  // Frames of `natoms` atoms in one group.
  std::int64_t frames_per_group(std::int64_t natoms) const {
    return std::max<std::int64_t>(1, atoms_per_group / std::max<std::int64_t>(1, natoms));
  }
};

struct PotentialResult {
  std::vector<double> energy;       // nframes (eV)
  std::vector<double> force;        // nframes x natoms x 3 (eV/A)
  std::vector<double> virial;       // nframes x 9 (eV), row-major
  std::vector<double> atom_energy;  // nframes x natoms (eV), with atomic
  std::vector<double> atom_virial;  // nframes x natoms x 9 (eV), with atomic; sums to the virial
  std::int64_t beyond_table = 0;    // compressed models: neighbour slots beyond the tables' end
};

// Atoms whose neighbour candidates the caller found, as pair_style deepkf holds them: the centres first
// (atoms 0 .. ncentre - 1), then every other atom a centre may see (LAMMPS's other local and ghost atoms).
// The energy is the centres'; forces and per-atom virials act on every atom (natoms x 3, natoms x 9), the
// per-atom energies on the centres (ncentre). One frame: energy and virial hold one frame's values.
struct NeighbourAtoms {
  std::int64_t natoms = 0;
  std::int64_t ncentre = 0;
  const double* coord = nullptr;         // natoms x 3 (A)
  const int* types = nullptr;            // natoms: the model's type indices
  const std::int64_t* offset = nullptr;  // ncentre + 1
  const std::int64_t* neigh = nullptr;   // centre i's candidates: neigh[offset[i] .. offset[i + 1])
};

// The frames as a System of the model's types (source "frames given"); throws DataError for arrays of the
// wrong size, a type index outside the type map, a non-finite coordinate or a degenerate cell.
System frames_as_system(const PotentialFrames& frames, const ModelConfig& config);

class Potential {
 public:
  // Loads a model file (load_model's errors) onto `device` ("cpu", "cuda", "cuda:1"; ConfigError for a
  // device name LibTorch does not know or a CUDA device this build or machine lacks).
  explicit Potential(const std::string& path, const std::string& device = "cpu");
  // A model already in memory, evaluated on the device its weights are on; `name` stands for the file in
  // messages ("" when the model has none).
  explicit Potential(LoadedModel loaded, std::string name = "");

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return model_.config; }
  const LoadedModel& loaded() const { return model_; }

  // Throws DataError for arrays of the wrong size, a type index outside the type map, a non-finite
  // coordinate or a degenerate cell; ModelError for a non-finite prediction (naming the frame).
  PotentialResult evaluate(const PotentialFrames& frames, const PotentialOptions& options = {}) const;

  // Frames of a stored system (indices into it), its elements matched to the model's type map by name.
  // Throws DataError naming the system for an element the model lacks or a frame out of range, ModelError
  // naming the frame and the system for a non-finite prediction. `numbers`: the frames' numbers in that
  // message (those in the file the system was read from; when empty, their indices in `system`).
  PotentialResult evaluate(const System& system, const std::vector<std::int64_t>& frames,
                           const PotentialOptions& options = {},
                           const std::vector<std::int64_t>& numbers = {}) const;

  // The candidates are sorted into the model's neighbour slots here (within rcut, by type and distance,
  // sel per type). No check of the prediction: the caller names its atoms in its own message.
  PotentialResult evaluate(const NeighbourAtoms& atoms, const PotentialOptions& options = {}) const;

  const torch::Device& device() const { return device_; }

 private:
  PotentialResult evaluate_frames(const System& system, const std::vector<std::int64_t>& frames,
                                  const PotentialOptions& options, const std::vector<std::int64_t>& numbers,
                                  const std::string& source) const;

  std::string path_;
  LoadedModel model_;
  torch::Device device_{torch::kCPU};
};

}  // namespace deepkf
