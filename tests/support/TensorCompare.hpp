#pragma once
// Comparing tensors and arrays of values in tests.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/support/Catch.hpp"

namespace deepkf::test {

// max |a - b| / max |b| over all elements, in float64 on the CPU (a and b of any dtype and device).
inline double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  const auto A = a.to(torch::kCPU, torch::kFloat64), B = b.to(torch::kCPU, torch::kFloat64);
  return (A - B).abs().max().item<double>() / std::max(1e-300, B.abs().max().item<double>());
}

// max |a_k - b_k| over two arrays of the same length (REQUIREd).
inline double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) d = std::max(d, std::abs(a[k] - b[k]));
  return d;
}

}  // namespace deepkf::test
