#include "src/train/GradientSum.hpp"

#include <torch/torch.h>

namespace deepkf {

std::vector<torch::Tensor> sum_gradients(std::vector<torch::Tensor> grads,
                                         const std::vector<torch::Tensor>& params, Communicator& comm) {
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) grads[i] = torch::zeros_like(params[i]);
  }
  if (comm.size() == 1) return grads;
  std::vector<torch::Tensor> flat;
  for (const auto& g : grads) flat.push_back(g.reshape({-1}));
  auto host = torch::cat(flat).to(torch::kCPU, torch::kFloat64).contiguous();
  comm.allreduce_sum(host.data_ptr<double>(), static_cast<std::size_t>(host.numel()));
  const auto summed = host.to(params.front().device(), grads.front().scalar_type());
  std::int64_t offset = 0;
  for (auto& g : grads) {
    const auto n = g.numel();
    g = summed.narrow(0, offset, n).view(g.sizes());
    offset += n;
  }
  return grads;
}

}  // namespace deepkf
