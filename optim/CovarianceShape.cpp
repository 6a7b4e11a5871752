#include "optim/CovarianceShape.hpp"

#include "src/core/Error.hpp"

namespace deepkf {

torch::Tensor covariance_shape(const std::string& rule, const std::vector<std::vector<torch::Tensor>>& probe,
                               const BlockLayout& layout) {
  const auto N = layout.num_parameters();
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  if (rule == "identity") return torch::ones({N}, f64);
  // v_j = mean over measurements of h_j^2 / |h|^2
  auto v = torch::zeros({N}, f64);
  std::int64_t count = 0;
  for (const auto& grads : probe) {
    const auto h = layout.gather(grads, torch::kFloat64).to(torch::kCPU);
    const double norm2 = h.dot(h).item<double>();
    if (!(norm2 > 0.0)) continue;
    v.add_(h.square() / norm2);
    ++count;
  }
  if (count == 0) return torch::ones({N}, f64);
  v.div_(static_cast<double>(count));
  if (rule == "layer") {
    // The tensors' slots in the flat order: each gets the mean of its weights' v.
    for (const auto& slot : layout.tensors()) {
      auto part = v.narrow(0, slot.offset, slot.numel);
      part.fill_(part.mean().item<double>());
    }
  } else if (rule != "gradient") {
    throw ConfigError("p0_shape \"" + rule + "\" must be \"identity\", \"gradient\" or \"layer\"");
  }
  // d_j = sqrt(mean(v) / v_j), clamped, then scaled to mean 1.
  const double mean_v = v.mean().item<double>();
  auto d = (mean_v / v.clamp_min(mean_v * 1e-12)).sqrt();
  const double mean_d = d.mean().item<double>();
  d.clamp_(mean_d / kShapeRange, mean_d * kShapeRange);
  return d / d.mean();
}

}  // namespace deepkf
