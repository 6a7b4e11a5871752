#pragma once
// Comparing tensors in tests.
#include <torch/torch.h>

#include <algorithm>

namespace deepkf::test {

// max |a - b| / max |b| over all elements, in float64 on the CPU (a and b of any dtype and device).
inline double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  const auto A = a.to(torch::kCPU, torch::kFloat64), B = b.to(torch::kCPU, torch::kFloat64);
  return (A - B).abs().max().item<double>() / std::max(1e-300, B.abs().max().item<double>());
}

}  // namespace deepkf::test
