#pragma once
// The energy bias shifted to fit the trained model's energy errors (`change_bias_after_training`).
//
// The per-type bias b is set from the labels before training (DataSetup); a trained model's energies can
// then be off by a per-type offset, most of all after a short RLEKF run, whose last energy updates fit the
// last frames seen. With n_kt atoms of type t and N_k atoms in training frame k and the residual
// r_k = E_k^ref - E_k, the shift d minimises the per-atom error over every training frame,
//
//     sum_k ((r_k - sum_t n_kt d_t) / N_k)^2 ,
//
// (the minimum-norm solution when the type counts are collinear, e.g. water's fixed O:H ratio), and b <- b +
// d. Only energies are evaluated (no forces), frames in batches of the training batch size; each rank takes
// its share of every system and the normal equations are summed over the ranks, so every rank sets the
// same bias.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/data/FrameSource.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

struct BiasRefit {
  std::vector<double> shift;  // d per type (eV)
  std::int64_t frames = 0;
  double rmse_before = 0.0;           // per-atom energy RMSE over the frames (eV/atom) before the shift
  double rmse_after = 0.0;            // and after it
  std::vector<std::string> warnings;  // a type absent from the frames (its bias is kept)
};

// Fits d on `parts` (batch_size[i] frames at a time for parts[i]) and adds it to model's energy bias.
// Collective over `comm`.
BiasRefit refit_energy_bias(DeepPot& model, const std::vector<FrameSubset>& parts,
                            const std::vector<int>& batch_size, torch::Device device, Communicator& comm);

}  // namespace deepkf
