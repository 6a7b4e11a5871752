#pragma once
// The model deviation of an ensemble on stored frames, computed exactly as pair_style deepkf writes it to
// model_devi.out (src/model/ModelDeviation.hpp), so that the deviation of an MD run and of the same
// frames scored afterwards can be compared.
#include <cstdint>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/eval/FrameErrors.hpp"
#include "src/model/ModelDeviation.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf {

struct EnsembleFrame {
  ModelDeviationRow deviation;
  double devi_e =
      0.0;  // standard deviation over the models of the energy per atom (eV/atom), as dp model-devi
  FrameErrors errors;  // of the first model, where the frame has labels
};

// One entry per frame of every set, in order: each model evaluates the frame on the CPU in its own precision
// with its own neighbour list (rcut, sel) and type map (the sets' type maps are matched by element name);
// the forces give the per-atom deviations and their max, min and mean, the virials the virial columns.
// `relative_level` >= 0 divides each atom's deviation by |<F_i>| + level (the plugin's `relative` keyword),
// `relative_v_level` >= 0 each virial component's by |<W>| / N + level (`relative_v`).
// Throws DataError naming the frame for an element a model lacks, ModelError for a non-finite prediction.
std::vector<EnsembleFrame> ensemble_deviation(const std::vector<LoadedModel>& models,
                                              const std::vector<FrameSubset>& sets,
                                              double relative_level = -1.0, double relative_v_level = -1.0);

}  // namespace deepkf
