// The shape of the initial covariance (optim/CovarianceShape.hpp) against its definition on hand-made
// gradients, and KalmanFilter::set_p0(p0, d) against P = p0 diag(d) block by block; with it, the first
// update of a linear measurement removes p0 h^T D h / (L lambda + p0 h^T D h) of its error, the form the
// automatic p0 uses for a shaped P.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "optim/AutoP0.hpp"
#include "optim/CovarianceShape.hpp"
#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "tests/support/Catch.hpp"

using deepkf::BlockLayout;
using deepkf::covariance_shape;
using deepkf::KalmanFilter;
using deepkf::KalmanOptions;

namespace {

const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

// Two tensors, a [2, 3] matrix and a [3] vector, with the probe's measurements given flat per tensor.
std::vector<torch::Tensor> grads_of(const std::vector<double>& matrix, const std::vector<double>& vector) {
  return {torch::tensor(matrix, f64).reshape({2, 3}), torch::tensor(vector, f64)};
}

}  // namespace

TEST_CASE("the covariance's shape follows 1 / rms of each weight's gradient, per weight or per tensor",
          "[covshape]") {
  const std::vector<torch::Tensor> params = {torch::zeros({2, 3}, f64), torch::zeros({3}, f64)};
  const auto layout = BlockLayout::from_tensors(params, 4);
  // Two measurements of |h| = 1 each after normalising; weight 5 (the vector's second) never moves.
  const std::vector<std::vector<torch::Tensor>> probe = {grads_of({3, 0, 0, 0, 0, 0}, {4, 0, 0}),
                                                         grads_of({0, 1, 1, 1, 1, 1}, {1, 0, 1})};
  const auto identity = covariance_shape("identity", probe, layout);
  CHECK(torch::equal(identity, torch::ones({9}, f64)));

  // v_j = mean_k h_kj^2 / |h_k|^2; d_j = sqrt(mean v / v_j), clamped to [mean / 100, mean * 100], mean 1.
  std::vector<double> v(9, 0.0);
  for (const auto& grads : probe) {
    const auto h = layout.gather(grads, torch::kFloat64);
    const auto n2 = h.dot(h).item<double>();
    for (int j = 0; j < 9; ++j)
      v[static_cast<std::size_t>(j)] += h[j].item<double>() * h[j].item<double>() / n2 / 2;
  }
  double mean_v = 0.0;
  for (const double x : v) mean_v += x / 9.0;
  std::vector<double> d;
  for (const double x : v) d.push_back(std::sqrt(mean_v / std::max(x, mean_v * 1e-12)));
  double mean_d = 0.0;
  for (const double x : d) mean_d += x / 9.0;
  for (auto& x : d) x = std::clamp(x, mean_d / deepkf::kShapeRange, mean_d * deepkf::kShapeRange);
  mean_d = 0.0;
  for (const double x : d) mean_d += x / 9.0;
  const auto per_weight = covariance_shape("gradient", probe, layout);
  REQUIRE(per_weight.size(0) == 9);
  CHECK(per_weight.mean().item<double>() == Approx(1.0).epsilon(1e-12));
  for (int j = 0; j < 9; ++j) {
    INFO("weight " << j);
    CHECK(per_weight[j].item<double>() == Approx(d[static_cast<std::size_t>(j)] / mean_d).epsilon(1e-12));
  }
  // The weight that never moved has the largest value, the one with the largest gradients the smallest.
  const auto flat_never =
      layout.gather({torch::zeros({2, 3}, f64), torch::tensor({0.0, 1.0, 0.0}, f64)}, torch::kFloat64);
  CHECK(per_weight.dot(flat_never).item<double>() == Approx(per_weight.max().item<double>()));

  // Per tensor: constant over each tensor, smaller for the tensor with the larger mean square.
  const auto per_layer = covariance_shape("layer", probe, layout);
  CHECK(per_layer.mean().item<double>() == Approx(1.0).epsilon(1e-12));
  for (const auto& slot : layout.tensors()) {
    const auto part = per_layer.narrow(0, slot.offset, slot.numel);
    CHECK(part.max().item<double>() == Approx(part.min().item<double>()).epsilon(1e-14));
  }
  CHECK_THROWS_AS(covariance_shape("diagonal", probe, layout), deepkf::ConfigError);
  // No measurement with a gradient: the identity.
  CHECK(torch::equal(covariance_shape("gradient", {grads_of({0, 0, 0, 0, 0, 0}, {0, 0, 0})}, layout),
                     torch::ones({9}, f64)));
}

TEST_CASE("set_p0 with a shape gives P = p0 diag(d), and the first update removes the fraction it predicts",
          "[covshape]") {
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    std::vector<torch::Tensor> params = {torch::zeros({7, 5}, f64), torch::zeros({5}, f64),
                                         torch::zeros({3, 4}, f64)};
    KalmanOptions options;
    options.blocksize = 8;
    options.p_dtype = p_dtype;
    options.lambda0 = 0.98;
    KalmanFilter kf(params, options);
    const auto N = kf.layout().num_parameters();
    const auto d = torch::linspace(0.2, 3.0, N, f64);
    kf.set_p0(2.5, d);
    for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
      const auto& b = kf.layout().blocks()[static_cast<std::size_t>(i)];
      INFO("block " << i);
      const auto want = torch::diag(2.5 * d.narrow(0, b.begin, b.size()));
      CHECK(torch::allclose(kf.covariance(i).to(torch::kFloat64), want, 1e-6, 0.0));
    }
    // y = h^T w: after one update e' / e = 1 - f with f = p0 h^T D h / (L lambda + p0 h^T D h).
    std::vector<torch::Tensor> h;
    for (const auto& p : params) h.push_back(torch::rand(p.sizes(), f64) - 0.5);
    const auto hf = kf.layout().gather(h, torch::kFloat64);
    const double g = hf.square().dot(d).item<double>();
    const double f = deepkf::first_update_fraction(2.5, g, kf.layout().num_blocks(), 0.98);
    const auto y = [&] {
      double s = 0.0;
      for (std::size_t t = 0; t < params.size(); ++t) s += (params[t] * h[t]).sum().item<double>();
      return s;
    };
    const double before = 1.0 - y();
    kf.update(before, h);
    CHECK((1.0 - y()) / before == Approx(1.0 - f).epsilon(p_dtype == torch::kFloat64 ? 1e-10 : 1e-6));
    CHECK_THROWS_AS(kf.set_p0(1.0, d), deepkf::OptimError);  // after a step
  }
  std::vector<torch::Tensor> params = {torch::zeros({4}, f64)};
  KalmanFilter kf(params, KalmanOptions{});
  CHECK_THROWS_AS(kf.set_p0(1.0, torch::ones({3}, f64)), deepkf::OptimError);
  CHECK_THROWS_AS(kf.set_p0(1.0, torch::tensor({1.0, 0.0, 1.0, 1.0}, f64)), deepkf::OptimError);
  CHECK_THROWS_AS(kf.set_p0(1.0, torch::tensor({1.0, std::nan(""), 1.0, 1.0}, f64)), deepkf::OptimError);
}
