#pragma once
// Every sum over ranks a training step takes (data parallel), in one place: the gradients of the loss
// (Adam) and, for RLEKF, each measurement's gradient h = dy/dw and innovation e = sqrt(B) mean |d| from the
// pieces every rank holds of its own frames (KalmanMeasurement.hpp).
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "optim/KalmanMeasurement.hpp"
#include "src/core/Communicator.hpp"

namespace deepkf {

// grads[i] shaped like params[i]; undefined gradients (parameters the quantity does not depend on, or a
// rank without frames) become zeros. With several ranks: one allreduce of all of them, staged through a
// float64 host buffer; the results are views of one buffer on the parameters' device. Collective.
std::vector<torch::Tensor> sum_gradients(std::vector<torch::Tensor> grads,
                                         const std::vector<torch::Tensor>& params, Communicator& comm);

// dy/dw of each measurement over `params`, summed over ranks in one reduction: [measurement][parameter].
// given[k], where not empty, is this rank's dy_k/dw taken already (without y's graph:
// DifferenceGradients.hpp); the others are taken here by backward passes from y. The measurements may share
// one graph (it is kept until the last backward pass). Collective.
using LocalGradients = std::vector<std::vector<torch::Tensor>>;
std::vector<std::vector<torch::Tensor>> measurement_gradients(const std::vector<Measurement>& ms,
                                                              const std::vector<torch::Tensor>& params,
                                                              Communicator& comm, LocalGradients given = {});

// The gradients as above and each measurement's innovation over the global batch of frames[k] frames
// (the pieces summed over ranks in a second reduction). Collective.
struct SummedMeasurements {
  std::vector<double> e;
  std::vector<std::vector<torch::Tensor>> grads;
};
SummedMeasurements sum_measurements(const std::vector<Measurement>& ms,
                                    const std::vector<std::int64_t>& frames,
                                    const std::vector<torch::Tensor>& params, Communicator& comm,
                                    LocalGradients given = {});

}  // namespace deepkf
