// The automatic p0 (optim/AutoP0.hpp) against the filter itself: for a linear measurement y = h^T w the
// innovation after one Kalman update is exactly (1 - f) e, so the fraction the rule promises is checked on
// a real KalmanFilter with several blocks; and the choice's invariances (scale of h, number of blocks).
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "optim/AutoP0.hpp"
#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "tests/support/Catch.hpp"

using deepkf::choose_p0;
using deepkf::evaluate_p0;
using deepkf::first_update_fraction;
using deepkf::GradientScales;
using deepkf::KalmanFilter;
using deepkf::KalmanOptions;

namespace {

// One update of a filter over `params` for y = sum_t <h_t, w_t> with reference y_ref; returns e after / e
// before, both measured on the weights.
double innovation_ratio(KalmanFilter& filter, std::vector<torch::Tensor>& params,
                        const std::vector<torch::Tensor>& h, double y_ref) {
  const auto y = [&] {
    double s = 0.0;
    for (std::size_t t = 0; t < params.size(); ++t) s += (params[t] * h[t]).sum().item<double>();
    return s;
  };
  const double before = y_ref - y();
  filter.update(before, h);
  return (y_ref - y()) / before;
}

}  // namespace

TEST_CASE("first update of a linear measurement removes the fraction p0 |h|^2 / (L lambda + p0 |h|^2)",
          "[autop0]") {
  torch::manual_seed(3);
  for (const double p0 : {0.01, 1.0, 37.0, 1e4}) {
    std::vector<torch::Tensor> params = {torch::randn({6, 5}, torch::kFloat64),
                                         torch::randn({7}, torch::kFloat64),
                                         torch::randn({4, 3}, torch::kFloat64)};
    KalmanOptions o;
    o.blocksize = 16;  // blocks of 16, 14, 7 and 12 weights
    o.lambda0 = 0.98;
    KalmanFilter filter(params, o);
    const auto blocks = filter.layout().num_blocks();
    REQUIRE(blocks == 4);
    filter.set_p0(p0);
    std::vector<torch::Tensor> h;
    double g = 0.0;
    for (const auto& p : params) {
      h.push_back(0.1 * torch::randn_like(p));
      g += h.back().pow(2).sum().item<double>();
    }
    const double f = first_update_fraction(p0, g, blocks, 0.98);
    const double ratio = innovation_ratio(filter, params, h, 2.5);
    INFO("p0 " << p0 << ", |h|^2 " << g << ", promised fraction " << f);
    CHECK(ratio == Approx(1.0 - f).epsilon(1e-9).margin(1e-12));
  }
}

TEST_CASE("set_p0 is refused after the first update and for a non-positive value", "[autop0]") {
  std::vector<torch::Tensor> params = {torch::ones({4}, torch::kFloat64)};
  KalmanFilter filter(params, KalmanOptions{});
  CHECK_THROWS_AS(filter.set_p0(0.0), deepkf::OptimError);
  CHECK_THROWS_AS(filter.set_p0(-1.0), deepkf::OptimError);
  filter.set_p0(5.0);
  CHECK(filter.covariance(0).diagonal().allclose(torch::full({4}, 5.0, torch::kFloat64)));
  filter.update(1.0, {torch::ones({4}, torch::kFloat64)});
  CHECK_THROWS_WITH(filter.set_p0(2.0), Catch::Contains("before the first step"));
}

TEST_CASE("automatic p0 follows the gradients: scaling every |h|^2 by s divides p0 by s", "[autop0]") {
  const GradientScales g{{15.0, 12.0, 20.0}, {1e-5, 3e-5, 2e-5, 4e-5}};
  const auto base = choose_p0(g, 4, 0.98);
  GradientScales scaled = g;
  for (auto& x : scaled.energy) x *= 100.0;
  for (auto& x : scaled.force) x *= 100.0;
  const auto c = choose_p0(scaled, 4, 0.98);
  CHECK(c.p0 == Approx(base.p0 / 100.0).epsilon(1e-12));
  CHECK(c.f_energy == Approx(base.f_energy).epsilon(1e-12));
  CHECK(c.f_force == Approx(base.f_force).epsilon(1e-12));
  // The odds f / (1 - f) of the first energy and force updates are reciprocal: symmetric about even odds.
  const auto odds = [](double f) { return f / (1.0 - f); };
  CHECK(odds(base.f_energy) * odds(base.f_force) == Approx(1.0).epsilon(1e-9));
  CHECK(base.f_energy > 0.5);
  // More blocks: lambda is counted once per block, so p0 grows with their number.
  CHECK(choose_p0(g, 8, 0.98).p0 == Approx(2.0 * base.p0).epsilon(1e-12));
  // The fractions it reports are what evaluate_p0 computes for that p0.
  const auto same = evaluate_p0(base.p0, g, 4, 0.98);
  CHECK(same.f_force == Approx(base.f_force).epsilon(1e-12));
  CHECK(same.f_energy == Approx(base.f_energy).epsilon(1e-12));
}

TEST_CASE("automatic p0 with one kind of measurement gives its first update even odds", "[autop0]") {
  CHECK(choose_p0(GradientScales{{2.0, 4.0, 8.0}, {}}, 3, 0.98).f_energy == Approx(0.5).epsilon(1e-12));
  CHECK(choose_p0(GradientScales{{}, {1e-4, 3e-4}}, 3, 0.98).f_force == Approx(0.5).epsilon(1e-12));
}

TEST_CASE("automatic p0 without any gradient is an error", "[autop0]") {
  CHECK_THROWS_AS(choose_p0(GradientScales{{0.0}, {}}, 1, 0.98), deepkf::OptimError);
}

TEST_CASE("with the automatic noise the first force update of a linear measurement removes half its error",
          "[autop0][noise]") {
  // An energy-like and a force-like measurement, |h|^2 6 orders apart. The automatic noise rho_f =
  // sqrt(g_f / g_e) with the automatic p0 gives the force even odds: the filter, taking y / sqrt(rho_f) and
  // e / sqrt(rho_f) (what RlekfStep does), removes exactly half of its error; without it almost none.
  torch::manual_seed(5);
  std::vector<torch::Tensor> params = {torch::randn({6, 5}, torch::kFloat64),
                                       torch::randn({9}, torch::kFloat64)};
  const std::vector<torch::Tensor> h_e = {torch::randn({6, 5}, torch::kFloat64),
                                          torch::randn({9}, torch::kFloat64)};
  const std::vector<torch::Tensor> h_f = {1e-3 * torch::randn({6, 5}, torch::kFloat64),
                                          1e-3 * torch::randn({9}, torch::kFloat64)};
  const auto squared = [](const std::vector<torch::Tensor>& h) {
    double s = 0.0;
    for (const auto& t : h) s += t.pow(2).sum().item<double>();
    return s;
  };
  const GradientScales g{{squared(h_e)}, {squared(h_f)}};
  const double rho = deepkf::auto_noise(squared(h_f), squared(h_e));
  CHECK(rho == Approx(std::sqrt(squared(h_f) / squared(h_e))).epsilon(1e-14));
  CHECK(deepkf::auto_noise(0.0, 1.0) == 1.0);  // no forces: no noise of their own
  for (const bool noise : {true, false}) {
    INFO((noise ? "automatic noise" : "no noise"));
    KalmanOptions o;
    o.blocksize = 16;
    o.lambda0 = 0.999;
    auto w = params;
    for (auto& t : w) t = t.clone();
    KalmanFilter filter(w, o);
    const double r = noise ? rho : 1.0;
    const auto choice = choose_p0(g, filter.layout().num_blocks(), 0.999, r);
    filter.set_p0(choice.p0);
    std::vector<torch::Tensor> scaled;
    for (const auto& t : h_f) scaled.push_back(t / std::sqrt(r));
    // y / sqrt(rho) = scaled^T w with target y_ref / sqrt(rho): the innovation ratio is that of y itself.
    const double ratio = innovation_ratio(filter, w, scaled, 0.7 / std::sqrt(r));
    CHECK(ratio == Approx(1.0 - choice.f_force).epsilon(1e-9));
    if (noise) {
      CHECK(choice.f_force == Approx(0.5).epsilon(1e-12));
      CHECK_THAT(choice.describe(true),
                 Catch::Contains("50% of a force error") && Catch::Contains("force noise"));
    } else {
      CHECK(choice.f_force < 2e-3);
    }
    CHECK(choice.f_energy > 0.99);  // the energy keeps its odds sqrt(g_e / g_f)
  }
}
