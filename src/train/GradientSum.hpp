#pragma once
// Gradients of the trainable parameters summed over ranks (data parallel).
#include <torch/types.h>

#include <vector>

#include "src/core/Communicator.hpp"

namespace deepkf {

// grads[i] shaped like params[i]; undefined gradients (parameters the quantity does not depend on, or a
// rank without frames) become zeros. With several ranks: one allreduce of all of them, staged through a
// float64 host buffer; the results are views of one buffer on the parameters' device. Collective.
std::vector<torch::Tensor> sum_gradients(std::vector<torch::Tensor> grads,
                                         const std::vector<torch::Tensor>& params, Communicator& comm);

}  // namespace deepkf
