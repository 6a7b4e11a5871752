#include "src/uncertainty/RankAgreement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace deepkf {

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// The pairs where both values are numbers.
void finite_pairs(const std::vector<double>& x, const std::vector<double>& y, std::vector<double>& xs,
                  std::vector<double>& ys) {
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) continue;
    xs.push_back(x[i]);
    ys.push_back(y[i]);
  }
}

// Positions of the k largest values (ties: the earlier position first).
std::vector<std::size_t> top(const std::vector<double>& v, std::size_t k) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] > v[b]; });
  order.resize(std::min(k, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

std::vector<double> ranks(const std::vector<double>& values) {
  const std::size_t n = values.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> r(n);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    // Places i .. j (0-based) hold equal values: each gets the mean rank (i + j) / 2 + 1.
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * static_cast<double>(i + j) + 1.0;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> xs, ys;
  finite_pairs(x, y, xs, ys);
  const std::size_t n = xs.size();
  if (n < 2) return kNan;
  const auto rx = ranks(xs), ry = ranks(ys);
  const double mean = 0.5 * static_cast<double>(n + 1);  // the mean of ranks 1 .. n, ties included
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0.0 || syy == 0.0) return kNan;
  return sxy / std::sqrt(sxx * syy);
}

double top_fraction_caught(const std::vector<double>& predicted, const std::vector<double>& actual,
                           double fraction) {
  std::vector<double> p, a;
  finite_pairs(predicted, actual, p, a);
  if (p.empty()) return kNan;
  const auto k = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(p.size()) - 1e-9));
  if (k == 0) return kNan;
  const auto worst = top(a, k), flagged = top(p, k);
  std::vector<std::size_t> both;
  std::set_intersection(worst.begin(), worst.end(), flagged.begin(), flagged.end(), std::back_inserter(both));
  return static_cast<double>(both.size()) / static_cast<double>(worst.size());
}

}  // namespace deepkf
