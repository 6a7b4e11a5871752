#include "optim/RankSums.hpp"

#include <torch/torch.h>

#include <cmath>

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

std::vector<std::vector<torch::Tensor>> measurement_gradients(const std::vector<Measurement>& ms,
                                                              const std::vector<torch::Tensor>& params,
                                                              Communicator& comm, LocalGradients given) {
  const auto m = ms.size();
  given.resize(m);
  // The graph is kept until the last measurement that takes its gradient from it.
  std::size_t last_backward = 0;
  for (std::size_t k = 0; k < m; ++k)
    if (given[k].empty() && ms[k].y.defined()) last_backward = k;
  std::vector<torch::Tensor> all, shapes;
  for (std::size_t k = 0; k < m; ++k) {
    std::vector<torch::Tensor> g(params.size());
    if (!given[k].empty()) {
      g = std::move(given[k]);
    } else if (ms[k].y.defined()) {
      g = torch::autograd::grad({ms[k].y}, params, {}, /*retain_graph=*/k < last_backward,
                                /*create_graph=*/false,
                                /*allow_unused=*/true);
    }
    all.insert(all.end(), g.begin(), g.end());
    shapes.insert(shapes.end(), params.begin(), params.end());
  }
  all = sum_gradients(std::move(all), shapes, comm);
  std::vector<std::vector<torch::Tensor>> grads(m);
  for (std::size_t k = 0; k < m; ++k) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(k * params.size());
    grads[k].assign(first, first + static_cast<std::ptrdiff_t>(params.size()));
  }
  return grads;
}

SummedMeasurements sum_measurements(const std::vector<Measurement>& ms,
                                    const std::vector<std::int64_t>& frames,
                                    const std::vector<torch::Tensor>& params, Communicator& comm,
                                    LocalGradients given) {
  SummedMeasurements out;
  out.grads = measurement_gradients(ms, params, comm, std::move(given));
  std::vector<double> sums;
  for (const auto& x : ms) {
    sums.push_back(x.abs_sum);
    sums.push_back(static_cast<double>(x.count));
  }
  if (comm.size() > 1) comm.allreduce_sum(sums.data(), sums.size());
  // e = sqrt(B) * mean |d| over the global batch
  for (std::size_t k = 0; k < ms.size(); ++k)
    out.e.push_back(
        kalman_error(sums[2 * k], static_cast<std::int64_t>(std::llround(sums[2 * k + 1])), frames[k]));
  return out;
}

}  // namespace deepkf
