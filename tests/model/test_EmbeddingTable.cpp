// The compression tables against the nets they replace: value, slope and curvature continuous at every knot
// (C2), the interpolation error under the quintic Hermite bound h^6 max|G^(6)| / 46080 and falling as h^6
// (value) and h^5 (slope), the tangent line beyond the table, and the grid covering the training range.
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "src/core/Error.hpp"
#include "src/model/EmbeddingTable.hpp"
#include "src/model/SwitchFunction.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

// The model's embedding nets in registration order (the tables' order).
std::vector<DenseNet> embedding_nets(DeepPot& model) {
  std::vector<DenseNet> nets;
  for (const auto& child : model->named_children()) {
    if (child.key().rfind("embedding_", 0) == 0)
      nets.emplace_back(std::dynamic_pointer_cast<DenseNetImpl>(child.value()));
  }
  return nets;
}

// Closest distances (A) of the two-type test model's pairs A-A, A-B, B-A, B-B.
TrainingRange test_range() {
  TrainingRange r(2);
  r.add({0.9, 1.1, 1.0, 1.3}, 10);
  return r;
}

DeepPot compressed_small_model(bool type_one_side, double step, double extrapolate = 5.0) {
  auto model = small_model(type_one_side, true);
  model->set_training_range(test_range());
  TableSettings s;
  s.step = step;
  s.extrapolate = extrapolate;
  model->compress(s);
  return model;
}

tabulated::Table<double> table_view(const EmbeddingTableImpl& t, std::size_t k) {
  return {t.grid(k), t.coefficients(k).data_ptr<double>()};
}

// Largest |G_table - G| and |G'_table - G'| over `count` random points in [from, to).
std::pair<double, double> sampled_error(DenseNet net, const tabulated::Table<double>& table,
                                        std::int64_t width, double from, double to, int count) {
  std::mt19937 gen(17);
  std::uniform_real_distribution<double> u(from, to);
  std::vector<double> xs(static_cast<std::size_t>(count));
  for (auto& x : xs) x = u(gen);
  const auto x = torch::tensor(xs, torch::kFloat64).view({-1, 1});
  const auto exact = net->forward_derivatives(x);
  auto g = torch::empty({count, width}, torch::kFloat64), dg = torch::empty_like(g);
  for (int i = 0; i < count; ++i)
    tabulated::table_values(table, width, xs[static_cast<std::size_t>(i)], g[i].data_ptr<double>(),
                            dg[i].data_ptr<double>());
  return {(g - exact[0]).abs().max().item<double>(), (dg - exact[1]).abs().max().item<double>()};
}

}  // namespace

TEST_CASE("tables match the net's value, slope and curvature on both sides of every knot",
          "[model][compress]") {
  for (bool one_side : {true, false}) {
    INFO("type_one_side " << one_side);
    auto model = compressed_small_model(one_side, 0.05);
    const auto& table = model->table();
    auto nets = embedding_nets(model);
    REQUIRE(table.size() == nets.size());
    for (std::size_t k = 0; k < table.size(); ++k) {
      const auto& g = table.grid(k);
      const auto n = g.intervals();
      std::vector<double> knots;
      for (std::int64_t i = 0; i <= n; ++i) knots.push_back(g.knot(i));
      const auto x = torch::tensor(knots, torch::kFloat64);
      const auto exact = nets[k]->forward_derivatives(x.view({-1, 1}));  // (n + 1) x M each
      const auto c = table.coefficients(k);                              // n x 6 x M
      const auto h = (x.narrow(0, 1, n) - x.narrow(0, 0, n)).view({n, 1});
      // right of knot i (t = 0): c0, c1, 2 c2
      const auto right = torch::stack({c.select(1, 0), c.select(1, 1), 2.0 * c.select(1, 2)});
      // left of knot i + 1 (t = h): p(h), p'(h), p''(h)
      auto value = torch::zeros_like(c.select(1, 0)), slope = value.clone(), curve = value.clone();
      for (int p = 0; p < 6; ++p) {
        const auto ck = c.select(1, p);
        value = value + ck * h.pow(p);
        if (p >= 1) slope = slope + p * ck * h.pow(p - 1);
        if (p >= 2) curve = curve + p * (p - 1) * ck * h.pow(p - 2);
      }
      const auto left = torch::stack({value, slope, curve});
      for (int d = 0; d < 3; ++d) {
        INFO("table " << k << ", derivative " << d);
        const auto ref = exact[static_cast<std::size_t>(d)];
        const double scale = 1 + ref.abs().max().item<double>();
        CHECK((right[d] - ref.narrow(0, 0, n)).abs().max().item<double>() < 1e-12 * scale);
        CHECK((left[d] - ref.narrow(0, 1, n)).abs().max().item<double>() < 1e-8 * scale);
      }
    }
  }
}

TEST_CASE("table errors stay under the quintic Hermite bound and fall as h^6 (value) and h^5 (slope)",
          "[model][compress]") {
  const std::vector<double> steps = {0.2, 0.1, 0.05};
  std::vector<double> value_err, slope_err, bound;
  double reported = 0;
  for (double step : steps) {
    // one table (type_one_side, neighbour type A), fine region only: extrapolate 1
    auto model = compressed_small_model(true, step, 1.0);
    auto net = embedding_nets(model)[0];
    const auto& table = model->table();
    const auto& g = table.grid(0);
    const auto [ve, se] = sampled_error(net, table_view(table, 0), 16, g.x0, g.fine_end(), 4000);
    value_err.push_back(ve);
    slope_err.push_back(se);
    reported = table.error(0).value_fine;
    // max |G^(6)| over the range: the 4th central difference of the exact G'' on a 0.01 grid
    const double d = 0.01;
    const auto x = torch::arange(g.x0 - 2 * d, g.fine_end() + 2 * d, d, torch::kFloat64).view({-1, 1});
    const auto c2 = net->forward_derivatives(x)[2];
    const auto n = c2.size(0) - 4;
    const auto g6 = (c2.narrow(0, 0, n) - 4 * c2.narrow(0, 1, n) + 6 * c2.narrow(0, 2, n) -
                     4 * c2.narrow(0, 3, n) + c2.narrow(0, 4, n)) /
                    std::pow(d, 4);
    // |G - p| <= max|G^(6)| / 6! max_t |t^3 (t - h)^3| = h^6 max|G^(6)| / 46080
    bound.push_back(std::pow(step, 6) * g6.abs().max().item<double>() / 46080.0);
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << steps[i] << ": max |dG| " << value_err[i] << " (bound " << bound[i] << "), max |dG'| "
                 << slope_err[i]);
    CHECK(value_err[i] > 0);
    CHECK(value_err[i] <= 1.1 * bound[i]);
    if (i == 0) continue;
    // halving the step: x 2^-6 for values and 2^-5 for slopes, within the spread of where the maxima fall
    const double rv = value_err[i - 1] / value_err[i], rs = slope_err[i - 1] / slope_err[i];
    INFO("ratios " << rv << " (value), " << rs << " (slope)");
    CHECK(rv > 40);
    CHECK(rv < 100);
    CHECK(rs > 20);
    CHECK(rs < 50);
  }
  // the error recorded with the table (7 points per interval) is that maximum, up to where each samples
  CHECK(reported < 2 * value_err.back());
  CHECK(reported > 0.5 * value_err.back());
}

TEST_CASE("beyond the table the tangent line at its end continues G", "[model][compress]") {
  auto model = compressed_small_model(false, 0.05);
  auto net = embedding_nets(model)[1];
  const auto& table = model->table();
  const auto view = table_view(table, 1);
  const auto& g = table.grid(1);
  const auto ends = torch::tensor({g.x0, g.end()}, torch::kFloat64).view({2, 1});
  const auto exact = net->forward_derivatives(ends);
  const std::int64_t m = 16;
  std::vector<double> v(m), d(m);
  for (const auto& [end, e] : {std::pair{0, -0.3}, std::pair{1, 0.7}}) {
    const double x = (end == 0 ? g.x0 : g.end()) + e;
    tabulated::table_values(view, m, x, v.data(), d.data());
    const auto value = torch::tensor(v, torch::kFloat64), slope = torch::tensor(d, torch::kFloat64);
    const auto ref_slope = exact[1][end];
    CHECK((value - (exact[0][end] + e * ref_slope)).abs().max().item<double>() < 1e-12);
    CHECK((slope - ref_slope).abs().max().item<double>() < 1e-12);
  }
}

TEST_CASE("the grids cover the training range, absent pairs and --min-distance", "[model][compress]") {
  auto model = small_model(false, true);
  const auto& c = model->config();
  TrainingRange range(2);
  range.add({0.9, 1.1, std::numeric_limits<double>::infinity(), 1.3}, 5);  // no B centre with an A neighbour
  model->set_training_range(range);
  TableSettings s;
  s.step = 0.02;
  model->compress(s);
  const auto& table = model->table();
  REQUIRE(table.size() == 4);
  const auto davg = model->davg(), dstd = model->dstd();
  const double expected[4] = {0.9, 1.1, 0.5, 1.3};  // B-A absent: the default 0.5 A
  for (int k = 0; k < 4; ++k) {
    const int centre = k / 2, nei = k % 2;
    const double m0 = davg[centre][c.sel_offset(nei)][0].item<double>();
    const double d0 = dstd[centre][c.sel_offset(nei)][0].item<double>();
    double ds = 0;
    const double smax = switched_inverse(expected[k], c.rcut, c.rcut_smth, ds);
    const auto& g = table.grid(static_cast<std::size_t>(k));
    INFO("table " << k);
    CHECK(g.x0 == Approx((0 - m0) / d0).epsilon(1e-14));
    CHECK(g.fine_end() >= (smax - m0) / d0);
    CHECK(g.fine_end() < (smax - m0) / d0 + s.step);
    CHECK(g.end() >= (5 * smax - m0) / d0);
    CHECK(g.end() < (5 * smax - m0) / d0 + 10 * s.step);
    CHECK(table.to_json()["min_distance"][centre][nei] == expected[k]);
  }
  CHECK(table.to_json()["range"].get<std::string>().find("B-A") != std::string::npos);
  CHECK_THROWS_WITH(model->compress(s), Catch::Contains("already compressed"));

  SECTION("--min-distance widens the fine region where it is closer than the training data") {
    auto widened = small_model(false, true);
    widened->set_training_range(range);
    TableSettings w = s;
    w.min_distance = 1.0;
    w.min_distance_given = true;
    widened->compress(w);
    const auto d = widened->table().to_json()["min_distance"];
    CHECK(d == nlohmann::json({{0.9, 1.0}, {1.0, 1.0}}));
  }
  SECTION("a model without a training range falls back to the default for every pair") {
    auto old = small_model(true, true);
    old->compress(s);
    CHECK(old->table().to_json()["min_distance"] == nlohmann::json({{0.5, 0.5}, {0.5, 0.5}}));
    CHECK(old->table().to_json()["range"].get<std::string>().find("records no training range") !=
          std::string::npos);
  }
  SECTION("the layout rebuilds the same grids, with zero tables to load into") {
    const EmbeddingTable copy(table.to_json(), c, "test");
    REQUIRE(copy->size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
      CHECK(copy->grid(k).x0 == table.grid(k).x0);
      CHECK(copy->grid(k).step == table.grid(k).step);
      CHECK(copy->grid(k).nfine == table.grid(k).nfine);
      CHECK(copy->grid(k).ncoarse == table.grid(k).ncoarse);
      CHECK(copy->coefficients(k).sizes() == table.coefficients(k).sizes());
      CHECK(copy->coefficients(k).abs().max().item<double>() == 0.0);
    }
    auto broken = table.to_json();
    broken["tables"][2].erase("fine_intervals");
    CHECK_THROWS_WITH(EmbeddingTable(broken, c, "model file 'x.pt'"),
                      Catch::Contains("x.pt") && Catch::Contains("fine_intervals"));
  }
}

TEST_CASE("bad compression settings are refused naming the setting", "[model][compress]") {
  const auto refuse = [](TableSettings s, const std::string& what) {
    auto model = small_model(true, false);
    CHECK_THROWS_AS(model->compress(s), ConfigError);
    CHECK_THROWS_WITH(model->compress(s), Catch::Contains(what));
    CHECK_FALSE(model->compressed());
  };
  TableSettings s;
  s.step = 0;
  refuse(s, "--step");
  s.step = std::nan("");
  refuse(s, "--step");
  s = {};
  s.extrapolate = 0.5;
  refuse(s, "--extrapolate");
  s = {};
  s.min_distance = -1;
  s.min_distance_given = true;
  refuse(s, "--min-distance");
  s = {};
  s.step = 1e-9;
  refuse(s, "choose a larger --step");
}
