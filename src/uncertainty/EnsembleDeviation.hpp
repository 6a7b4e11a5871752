#pragma once
// The model deviation of an ensemble on stored frames, computed exactly as pair_style deepkf writes it to
// model_devi.out (src/model/ModelDeviation.hpp), so that the deviation of an MD run and of the same
// frames scored afterwards can be compared.
#include <cstdint>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/eval/Ensemble.hpp"
#include "src/eval/FrameErrors.hpp"
#include "src/model/ModelDeviation.hpp"

namespace deepkf {

struct EnsembleFrame {
  ModelDeviationRow deviation;
  double devi_e =
      0.0;  // standard deviation over the models of the energy per atom (eV/atom), as dp model-devi
  FrameErrors errors;             // of the first model, where the frame has labels
  std::vector<double> atom_devi;  // per-atom force deviation, in the frame's atom order (with `atomic`)
};

// DeePMD-kit's options of dp model-devi (and the plugin's keywords).
struct DeviationOptions {
  double relative = -1.0;    // >= 0: each atom's force deviation over |<F_i>| + relative (`relative`)
  double relative_v = -1.0;  // >= 0: each virial component's over |<W>| / N + relative_v (`relative_v`)
  bool atomic = false;       // keep the per-atom force deviations (`atomic`)
  // Deviations from the labels instead of the ensemble mean (`--real_error`): forces, virials (0 where the
  // frames have none) and energies per atom; frames without energies or forces are a DataError.
  bool real_error = false;
};

// One entry per frame of every set, in order: each model evaluates the frame on its device in its own
// precision with its own neighbour list (rcut, sel) and type map (matched to the sets' by element name);
// the forces give the per-atom deviations and their max, min and mean, the virials the virial columns.
// Throws DataError naming the system for an element a model lacks, ModelError naming the model and the
// frame for a non-finite prediction.
std::vector<EnsembleFrame> ensemble_deviation(const Ensemble& models, const std::vector<FrameSubset>& sets,
                                              const DeviationOptions& options = {});

}  // namespace deepkf
