#pragma once
// A model file as a potential: frames held in memory in, energies, forces and virials (and per-atom values)
// out, in float64 whatever the model's precision. The Python module's DeepPot is this class; it is the
// inference entry point for callers that hold coordinates rather than data files.
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
};

struct PotentialResult {
  std::vector<double> energy;       // nframes (eV)
  std::vector<double> force;        // nframes x natoms x 3 (eV/A)
  std::vector<double> virial;       // nframes x 9 (eV), row-major
  std::vector<double> atom_energy;  // nframes x natoms (eV), with atomic
  std::vector<double> atom_virial;  // nframes x natoms x 9 (eV), with atomic; sums to the virial
};

// The frames as a System of the model's types (source "frames given"); throws DataError for arrays of the
// wrong size, a type index outside the type map, a non-finite coordinate or a degenerate cell.
System frames_as_system(const PotentialFrames& frames, const ModelConfig& config);

class Potential {
 public:
  // Loads a model file (load_model's errors) onto `device` ("cpu", "cuda", "cuda:1"; ConfigError for a
  // device name LibTorch does not know or a CUDA device this build or machine lacks).
  explicit Potential(const std::string& path, const std::string& device = "cpu");

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return model_.config; }
  const LoadedModel& loaded() const { return model_; }

  // Throws DataError for arrays of the wrong size, a type index outside the type map, a non-finite
  // coordinate or a degenerate cell; ModelError for a non-finite prediction (naming the frame).
  PotentialResult evaluate(const PotentialFrames& frames, const PotentialOptions& options = {}) const;

 private:
  std::string path_;
  LoadedModel model_;
  std::string device_;
};

}  // namespace deepkf
