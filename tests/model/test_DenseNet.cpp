// The dense nets' written-out derivatives against LibTorch's autograd: forward-mode value, slope and
// curvature of the embedding net (what the compression tables are built from) and the reverse-mode input
// gradient of the fitting net (what a compressed model's forces start from).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "src/model/DenseNet.hpp"
#include "tests/support/Catch.hpp"

using deepkf::DenseNet;
using deepkf::DenseNetImpl;

namespace {

double max_abs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

}  // namespace

TEST_CASE("forward_derivatives gives the embedding net's value, slope and curvature", "[model][densenet]") {
  auto gen = at::detail::createCPUGenerator(5);
  for (bool dt : {false, true}) {
    INFO("resnet_dt " << dt);
    // 1 -> 4 (no skip), 4 -> 8 (y = [x, x] + h), 8 -> 8 (y = x + h), 8 -> 5 (no skip)
    DenseNet net(DenseNetImpl::Kind::Embedding, 1, std::vector<int>{4, 8, 8, 5}, dt, gen, torch::kFloat64);
    const auto x = torch::linspace(-3, 6, 37, torch::kFloat64).view({-1, 1});
    const auto [y, y1, y2] = net->forward_derivatives(x);
    CHECK(max_abs(y - net->forward(x)) < 1e-14);
    // slope and curvature of each channel by autograd (double backward)
    for (int m = 0; m < 5; ++m) {
      const auto xa = x.clone().requires_grad_(true);
      const auto ya = net->forward(xa).select(1, m).sum();
      const auto d1 = torch::autograd::grad({ya}, {xa}, {}, true, true)[0];
      const auto d2 = torch::autograd::grad({d1.sum()}, {xa})[0];
      CHECK(max_abs(y1.select(1, m) - d1.squeeze(1)) < 1e-12 * (1 + max_abs(d1)));
      CHECK(max_abs(y2.select(1, m) - d2.squeeze(1)) < 1e-12 * (1 + max_abs(d2)));
    }
    // float32 input: the float64 weights are used at float32
    const auto [y32, s32, c32] = net->forward_derivatives(x.to(torch::kFloat32));
    CHECK(y32.scalar_type() == torch::kFloat32);
    CHECK(max_abs(s32.to(torch::kFloat64) - y1) < 1e-5 * (1 + max_abs(y1)));
  }
  DenseNet fit(DenseNetImpl::Kind::Fitting, 3, std::vector<int>{4}, false, gen, torch::kFloat64);
  CHECK_THROWS(fit->forward_derivatives(torch::zeros({2, 1}, torch::kFloat64)));
}

TEST_CASE("forward_with_input_gradient equals autograd's input gradient", "[model][densenet]") {
  auto gen = at::detail::createCPUGenerator(6);
  struct Case {
    DenseNetImpl::Kind kind;
    std::int64_t n_in;
    std::vector<int> widths;
    bool dt;
  };
  const std::vector<Case> cases = {
      {DenseNetImpl::Kind::Fitting, 12, {10, 10, 10}, true},  // tanh, then residual layers, then linear
      {DenseNetImpl::Kind::Fitting, 12, {10, 7}, false},
      {DenseNetImpl::Kind::Embedding, 1, {4, 8, 8, 5}, true},  // no skip, doubled, skip, no skip
      {DenseNetImpl::Kind::Embedding, 1, {3, 6}, false}};
  for (const auto& c : cases) {
    DenseNet net(c.kind, c.n_in, c.widths, c.dt, gen, torch::kFloat64);
    const auto x = torch::randn({9, c.n_in}, torch::kFloat64) * 2.0;
    const auto [y, grad] = net->forward_with_input_gradient(x);
    CHECK(max_abs(y - net->forward(x)) < 1e-14);
    const auto xa = x.clone().requires_grad_(true);
    const auto ref = torch::autograd::grad({net->forward(xa).sum()}, {xa})[0];
    CHECK(max_abs(grad - ref) < 1e-13 * (1 + max_abs(ref)));
    CHECK_FALSE(grad.requires_grad());
  }
}
