// The trust radius's m x m algebra (optim/TrustRegion.hpp) against hand-worked and dense values, and the
// per-block products it reads (optim/BlockGrams.hpp).
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "optim/BlockGrams.hpp"
#include "optim/TrustRegion.hpp"
#include "src/core/Error.hpp"
#include "tests/support/Catch.hpp"

using deepkf::trust_step;

namespace {

std::vector<double> values(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

TEST_CASE("one measurement: the damping is the step's excess over the radius", "[optim][trust]") {
  // dw = y e / (a (1 + mu)), |dw| = |y| |e| / (a (1 + mu)): here |y| = 3, e = 2, a = 4, |dw(0)| = 1.5.
  const auto t = trust_step({4.0}, {9.0}, {2.0}, 1, 0.5);
  CHECK(t.free == Approx(1.5).epsilon(1e-14));
  CHECK(t.length == Approx(0.5).epsilon(1e-6));
  CHECK(t.mu == Approx(2.0).epsilon(1e-5));
  const auto inside = trust_step({4.0}, {9.0}, {2.0}, 1, 2.0);
  CHECK(inside.mu == 0.0);
  CHECK(inside.length == inside.free);
}

TEST_CASE("several measurements: |Y (A + mu diag A)^-1 e| equals the radius, as dense algebra gives it",
          "[optim][trust]") {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  for (const std::int64_t m : {2, 5}) {
    INFO("m " << m);
    const auto Y = at::randn({50, m}, gen, torch::kFloat64);
    const auto H = at::randn({50, m}, gen, torch::kFloat64);
    // A = lambda I + H^T P H for an SPD P; Y = P H would tie them, but any SPD A and any Y define the step.
    const auto B = at::randn({m, m}, gen, torch::kFloat64);
    const auto A = B.mm(B.t()) + 0.1 * torch::eye(m, torch::kFloat64);
    const auto e = at::randn({m}, gen, torch::kFloat64);
    const auto G = Y.t().mm(Y);
    const double free = Y.mv(torch::inverse(A).mv(e)).norm().item<double>();
    for (const double fraction : {0.9, 0.1, 1e-4}) {
      const double r = fraction * free;
      const auto t = trust_step(values(A), values(G), values(e), m, r);
      CHECK(t.free == Approx(free).epsilon(1e-10));
      CHECK(t.mu > 0.0);
      const auto Amu = A + t.mu * torch::diag(A.diagonal());
      CHECK(Y.mv(torch::inverse(Amu).mv(e)).norm().item<double>() == Approx(r).epsilon(1e-5));
      CHECK(t.length <= r);
    }
  }
}

TEST_CASE("the trust step refuses a radius that is not positive and a matrix that is not definite",
          "[optim][trust]") {
  CHECK_THROWS_AS(trust_step({4.0}, {9.0}, {2.0}, 1, 0.0), deepkf::OptimError);
  CHECK_THROWS_AS(trust_step({4.0}, {9.0}, {2.0}, 1, NAN), deepkf::OptimError);
  CHECK_THROWS_WITH(trust_step({-1.0}, {9.0}, {2.0}, 1, 1.0), Catch::Contains("not positive definite"));
}

TEST_CASE("per-block products: the batched form equals the threaded sums", "[optim][trust]") {
  // Runs of equal sizes and sizes that change at every block; m = 1 and m > 1.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
  const std::vector<std::int64_t> sizes = {3, 3, 3, 900, 900, 1, 7, 7, 1300, 2};
  std::int64_t total = 0;
  for (const auto n : sizes) total += n;
  for (const std::int64_t m : {1, 3}) {
    INFO("m " << m);
    const auto X = at::randn({m, total}, gen, torch::kFloat64);
    const auto Z = at::randn({m, total}, gen, torch::kFloat64);
    const auto loop = deepkf::block_grams_cpu(X, Z, sizes);
    const auto batched = deepkf::block_grams_batched(X, Z, sizes);
    REQUIRE(loop.sizes() == batched.sizes());
    CHECK(torch::allclose(loop, batched, 1e-12, 1e-12));
    // Block 3 by hand.
    const auto x3 = X.narrow(1, 9, 900), z3 = Z.narrow(1, 9, 900);
    CHECK(torch::allclose(loop[3], x3.mm(z3.t()), 1e-12, 1e-12));
  }
}
