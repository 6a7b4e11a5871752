#pragma once
// Helpers shared by the optimizer tests: parameter sets and an independent flattening.
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "tests/support/TensorCompare.hpp"  // relative_difference

namespace deepkf::test {

// Parameters with the given shapes, values from a seeded generator, dtype `dtype`.
inline std::vector<torch::Tensor> make_params(const std::vector<std::vector<std::int64_t>>& shapes,
                                              std::uint64_t seed, torch::ScalarType dtype = torch::kFloat64) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> params;
  for (const auto& s : shapes) params.push_back(torch::randn(s, torch::TensorOptions().dtype(dtype)));
  return params;
}

// Shapes giving blocks of sizes 10, 2, 5, 10, 4, 2, 10, 10 with blocksize 10 (see the layout test in
// test_BlockLayout.cpp).
inline const std::vector<std::vector<std::int64_t>> kMixedShapes = {{3, 4}, {5}, {7, 2}, {2}, {20}};

// The largest absolute difference of a and b, relative to b's largest magnitude (at least 1).
inline double max_rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const auto scale = std::max(1.0, b.abs().max().item<double>());
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() / scale;
}

inline std::vector<torch::Tensor> clone_all(const std::vector<torch::Tensor>& xs) {
  std::vector<torch::Tensor> out;
  for (const auto& x : xs) out.push_back(x.detach().clone());
  return out;
}

// The definition of the flat order written out independently of BlockLayout: W^T row-major for 2-D,
// as-is otherwise, tensors one after the other.
inline torch::Tensor flatten_by_definition(const std::vector<torch::Tensor>& xs) {
  std::vector<torch::Tensor> parts;
  for (const auto& x : xs) parts.push_back(x.dim() == 2 ? x.t().contiguous().view({-1}) : x.reshape({-1}));
  return torch::cat(parts).to(torch::kFloat64);
}

// Gradients for step k: reproducible random tensors shaped like the parameters.
inline std::vector<torch::Tensor> make_grads(const std::vector<torch::Tensor>& params, std::int64_t k,
                                             double scale = 1.0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + static_cast<std::uint64_t>(k));
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    grads.push_back(scale * at::randn(p.sizes(), gen, torch::TensorOptions().dtype(p.scalar_type())));
  }
  return grads;
}

// Innovation for step k.
inline double make_innovation(std::int64_t k) { return 0.3 * std::sin(1.7 * static_cast<double>(k) + 0.4); }

// The filter's state as format 1 held it (what earlier versions wrote): the scalars and every block as a
// dense [n_i, n_i] matrix "P_<i>", under "kalman". For tests that old states still restore.
inline void save_format1_state(deepkf::KalmanFilter& kf, torch::serialize::OutputArchive& archive) {
  torch::serialize::OutputArchive state;
  state.write("format_version", torch::full({}, std::int64_t{1}, torch::kInt64));
  state.write("lambda", torch::full({}, kf.lambda(), torch::kFloat64));
  state.write("steps", torch::full({}, kf.steps(), torch::kInt64));
  state.write("blocksize", torch::full({}, kf.options().blocksize, torch::kInt64));
  std::vector<std::int64_t> sizes;
  for (const auto& b : kf.layout().blocks()) sizes.push_back(b.size());
  state.write("block_sizes", torch::tensor(sizes, torch::kInt64));
  for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i)
    state.write("P_" + std::to_string(i), kf.covariance(i));
  archive.write("kalman", state);
}

// The m gradients and innovations of joint step s: columns of very different scales, as an energy and
// force measurements have.
struct JointStep {
  std::vector<double> e;
  std::vector<std::vector<torch::Tensor>> grads;
};
inline JointStep make_joint(const std::vector<torch::Tensor>& params, std::int64_t s, std::int64_t m) {
  JointStep out;
  for (std::int64_t k = 0; k < m; ++k) {
    const double scale = k == 0 ? 1.0 : 0.05 * static_cast<double>(k);
    out.grads.push_back(make_grads(params, 100 * s + k, scale));
    out.e.push_back(make_innovation(7 * s + k));
  }
  return out;
}

// Blocks of 10, p0 2, lambda_0 0.95.
inline KalmanOptions small_options(torch::ScalarType p_dtype) {
  KalmanOptions options;
  options.blocksize = 10;
  options.p_dtype = p_dtype;
  options.p0 = 2.0;
  options.lambda0 = 0.95;
  return options;
}

}  // namespace deepkf::test
