#pragma once
// The optimizer interface, in the spirit of n2p2's Updater: every optimizer reports its name, a short status
// for logs, the memory its state takes, and saves/restores that state. How a step is taken differs and is
// not forced into one signature:
//   - RLEKF: one Kalman update per scalar measurement, given the innovation e and the gradient dy/dw:
//     KalmanFilter::update(e, grads), several per batch (energy, force groups, virial).
//   - Adam: one step per batch on the gradients of a loss that the caller back-propagated:
//     AdamTrainer::zero_grad(), loss.backward(), AdamTrainer::step(t).
// The training loop sees either through its training step (src/train/TrainingStep.hpp), which knows the
// model and the measurements.
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace deepkf {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // "RLEKF" or "Adam".
  virtual std::string name() const = 0;
  // A short status for logs, e.g. "lambda 0.99123" or "lr 1.00e-03".
  virtual std::string status() const = 0;
  // Bytes of optimizer state held by this rank (RLEKF: its covariance blocks; Adam: the moment estimates).
  virtual std::int64_t state_bytes() const = 0;
  // Saves the state into `archive` (under the optimizer's own key). Collective for distributed optimizers:
  // every rank calls it and rank 0's archive holds the complete state.
  virtual void save(torch::serialize::OutputArchive& archive) = 0;
  // Restores what save() wrote; every rank calls it with the same archive.
  virtual void load(torch::serialize::InputArchive& archive) = 0;
};

}  // namespace deepkf
