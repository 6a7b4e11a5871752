#pragma once
// The model-deviation score of DP-GEN: an ensemble of models trained from different seeds explores together
// (pair_style deepkf MODEL1 MODEL2 ...: the first drives the dynamics) and every dump_freq steps the plugin
// writes max_i eps_i, eps_i = sqrt((1/K) sum_k |F_ik - <F_i>|^2), to model_devi.out (docs/lammps.md). A
// frame's score is that value at its timestep.
#include <cstdint>
#include <map>
#include <string>

#include "src/learn/FrameScorer.hpp"

namespace deepkf {

class EnsembleDeviationScorer final : public FrameScorer {
 public:
  std::string describe() const override { return "max force deviation (eV/A)"; }
  std::vector<double> score(const ExploredRun& run) const override;
};

// max_devi_f of every row of a model_devi.out file, by timestep (a step written twice keeps its last row).
// Throws DataError naming the file and line for a row that is not 7 or more numbers.
std::map<std::int64_t, double> read_max_force_deviation(const std::string& path);

}  // namespace deepkf
