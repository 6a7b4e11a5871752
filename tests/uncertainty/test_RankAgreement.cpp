// Rank agreement of a predicted uncertainty with the actual error: Spearman's rho against the textbook
// formula without ties and hand-computed values with ties, and the share of the worst frames caught.
#include <cmath>
#include <vector>

#include "src/uncertainty/RankAgreement.hpp"
#include "tests/support/Catch.hpp"

using deepkf::ranks;
using deepkf::spearman;
using deepkf::top_fraction_caught;

TEST_CASE("ranks share the mean rank of ties", "[uncertainty][rank]") {
  CHECK(ranks({3.0, 1.0, 2.0}) == std::vector<double>{3, 1, 2});
  CHECK(ranks({5.0, 1.0, 5.0, 0.0}) == std::vector<double>{3.5, 2, 3.5, 1});
}

TEST_CASE("spearman rho", "[uncertainty][rank]") {
  // Without ties rho = 1 - 6 sum d^2 / (n (n^2 - 1)): ranks x 1..6, y ranks 2 1 4 3 6 5, d^2 = 6.
  const std::vector<double> x = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  const std::vector<double> y = {20, 10, 40, 30, 60, 50};
  CHECK(spearman(x, y) == Approx(1.0 - 6.0 * 6.0 / (6.0 * 35.0)));
  // Monotone transforms do not change it; reversing the order flips its sign.
  std::vector<double> x3, minus_y;
  for (double v : x) x3.push_back(std::exp(10 * v));
  for (double v : y) minus_y.push_back(-v);
  CHECK(spearman(x3, y) == Approx(spearman(x, y)));
  CHECK(spearman(x, minus_y) == Approx(-spearman(x, y)));
  CHECK(spearman(x, x) == Approx(1.0));
  // Ties: x ranks 1 2.5 2.5 4, y ranks 1 2 3 4: Pearson of the ranks = 2.5 / sqrt(4.5 * 5).
  CHECK(spearman({1, 2, 2, 3}, {1, 2, 3, 4}) == Approx(4.5 / std::sqrt(4.5 * 5.0)));
  // Pairs with a NaN are left out; a constant side or fewer than two pairs has no rho.
  const double nan = std::nan("");
  CHECK(spearman({1, nan, 2, 3}, {1, 5, 2, 3}) == Approx(1.0));
  CHECK(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  CHECK(std::isnan(spearman({1}, {2})));
}

TEST_CASE("the worst frames caught by the highest predictions", "[uncertainty][rank]") {
  // 20 frames: the actual worst 10% are frames 19 and 18; the prediction ranks 19 first and 3 second.
  std::vector<double> actual, predicted;
  for (int i = 0; i < 20; ++i) {
    actual.push_back(i);
    predicted.push_back(i == 3 ? 100.0 : i == 18 ? 0.5 : i);
  }
  CHECK(top_fraction_caught(predicted, actual, 0.1) == Approx(0.5));
  CHECK(top_fraction_caught(actual, actual, 0.1) == Approx(1.0));
  // 0.1 of 80 frames is 8 frames, not 9 (no rounding up of 8.000000000000002).
  std::vector<double> a80, p80;
  for (int i = 0; i < 80; ++i) {
    a80.push_back(i);
    p80.push_back(i < 72 ? i : -i);  // the worst 8 predicted lowest
  }
  CHECK(top_fraction_caught(p80, a80, 0.1) == 0.0);
  CHECK(std::isnan(top_fraction_caught({}, {}, 0.1)));
}
