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
// d. When the run has validation frames, the same per-atom error is formed on them before and after the
// shift (one energy evaluation: the shift is linear in d), and the shift is applied only if it does not raise
// it: the training frames' offset need not be the held-out frames' (other structures, or the last steps
// having moved the energy), and a fit that makes held-out energies worse is not what the user asked for.
// Only energies are evaluated (no forces), frames in batches of each set's batch size; each rank takes its
// share of every system and the sums are summed over the ranks, so every rank takes the same decision.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/data/FrameSource.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/Statistics.hpp"

namespace deepkf {

// A set of frames and the batch size of each of its parts (systems).
struct FrameParts {
  const std::vector<FrameSubset>& parts;
  const std::vector<int>& batch_size;
};

struct BiasRefit {
  std::vector<double> shift;  // d per type (eV), fitted on the training frames
  bool applied = false;       // whether b <- b + d was done
  std::int64_t frames = 0;
  double rmse_before = 0.0;       // per-atom energy RMSE over the training frames (eV/atom) before the shift
  double rmse_after = 0.0;        // and with it
  std::int64_t valid_frames = 0;  // validation frames evaluated (0: none, the shift is applied)
  double valid_before = 0.0, valid_after = 0.0;  // the same over the validation frames
  std::vector<std::string> warnings;             // a type absent from the frames (its bias is kept)

  // "O +0.0041, H +0.0082": the shift per element of `type_map` (eV), as the logs give it.
  std::string shift_text(const std::vector<std::string>& type_map) const;
};

// Fits d on `train`, checks it on `valid` (may have no parts) and adds it to model's energy bias unless it
// raises the validation error. Collective over `comm`.
BiasRefit refit_energy_bias(DeepPot& model, FrameParts train, FrameParts valid, torch::Device device,
                            Communicator& comm);
// The same without validation frames: the shift is always applied (fine-tuning, `deepkf change-bias`).
BiasRefit refit_energy_bias(DeepPot& model, FrameParts train, torch::Device device, Communicator& comm);

// The bias from the labels alone, as a fresh training sets it (DataSetup): the minimum-norm least-squares fit
// of the frames' energies E_k on their type counts n_kt; a type with no atoms in the frames keeps its value
// in `fallback` (ntypes, eV) and gets a warning. Collective over `comm`.
EnergyBias label_energy_bias(const ModelConfig& config, FrameParts frames, const torch::Tensor& fallback,
                             Communicator& comm);

}  // namespace deepkf
