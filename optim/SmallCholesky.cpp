#include "optim/SmallCholesky.hpp"

#include <cmath>

namespace deepkf {

SmallCholesky::SmallCholesky(const std::vector<double>& A, std::int64_t m)
    : m_(m), C_(static_cast<std::size_t>(m * m), 0.0) {
  const auto at = [m](std::int64_t i, std::int64_t j) { return static_cast<std::size_t>(i * m + j); };
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      // c_ij = (a_ij - sum_{k<j} c_ik c_jk) / c_jj ;  c_ii = sqrt(a_ii - sum_{k<i} c_ik^2)
      double s = A[at(i, j)];
      for (std::int64_t k = 0; k < j; ++k) s -= C_[at(i, k)] * C_[at(j, k)];
      if (i == j) {
        if (!(s > 0.0) || !std::isfinite(s)) {
          ok_ = false;
          return;
        }
        C_[at(i, i)] = std::sqrt(s);
      } else {
        C_[at(i, j)] = s / C_[at(j, j)];
      }
    }
  }
}

std::vector<double> SmallCholesky::lower_inverse() const {
  const std::int64_t m = m_;
  const auto at = [m](std::int64_t i, std::int64_t j) { return static_cast<std::size_t>(i * m + j); };
  std::vector<double> inv(C_.size(), 0.0);
  for (std::int64_t col = 0; col < m; ++col) {
    for (std::int64_t i = col; i < m; ++i) {
      double s = i == col ? 1.0 : 0.0;
      for (std::int64_t k = col; k < i; ++k) s -= C_[at(i, k)] * inv[at(k, col)];
      inv[at(i, col)] = s / C_[at(i, i)];
    }
  }
  return inv;
}

std::vector<double> SmallCholesky::solve(const std::vector<double>& b) const {
  const std::int64_t m = m_;
  const auto at = [m](std::int64_t i, std::int64_t j) { return static_cast<std::size_t>(i * m + j); };
  // C z = b, then C^T x = z.
  std::vector<double> z(static_cast<std::size_t>(m)), x(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) {
    double s = b[static_cast<std::size_t>(i)];
    for (std::int64_t k = 0; k < i; ++k) s -= C_[at(i, k)] * z[static_cast<std::size_t>(k)];
    z[static_cast<std::size_t>(i)] = s / C_[at(i, i)];
  }
  for (std::int64_t i = m - 1; i >= 0; --i) {
    double s = z[static_cast<std::size_t>(i)];
    for (std::int64_t k = i + 1; k < m; ++k) s -= C_[at(k, i)] * x[static_cast<std::size_t>(k)];
    x[static_cast<std::size_t>(i)] = s / C_[at(i, i)];
  }
  return x;
}

}  // namespace deepkf
