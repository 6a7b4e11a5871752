#include "optim/TrustRegion.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "optim/SmallCholesky.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// |Y A_mu^-1 e| from G = Y^T Y.
double step_length(const std::vector<double>& A, const std::vector<double>& G, const std::vector<double>& e,
                   std::int64_t m, double mu) {
  const SmallCholesky chol(damped(A, m, mu), m);
  if (!chol.ok()) throw OptimError("trust radius: the innovation matrix is not positive definite");
  const auto c = chol.solve(e);
  double s = 0.0;
  for (std::int64_t a = 0; a < m; ++a) {
    for (std::int64_t b = 0; b < m; ++b)
      s += c[static_cast<std::size_t>(a)] * G[static_cast<std::size_t>(a * m + b)] *
           c[static_cast<std::size_t>(b)];
  }
  return std::sqrt(std::max(s, 0.0));
}

}  // namespace

std::vector<double> damped(const std::vector<double>& A, std::int64_t m, double mu) {
  auto out = A;
  for (std::int64_t k = 0; k < m; ++k) out[static_cast<std::size_t>(k * m + k)] *= 1.0 + mu;
  return out;
}

TrustStep trust_step(const std::vector<double>& A, const std::vector<double>& G, const std::vector<double>& e,
                     std::int64_t m, double radius) {
  if (!(radius > 0.0) || !std::isfinite(radius))
    throw OptimError("trust radius " + std::to_string(radius) + " is not positive and finite");
  TrustStep t;
  t.free = step_length(A, G, e, m, 0.0);
  t.length = t.free;
  if (t.free <= radius) return t;
  // |dw(mu)| falls like 1 / (1 + mu) for large mu (A_mu ~ (1 + mu) diag(A)): bracket on 1 + mu, then
  // bisect in log(1 + mu). 1 + mu = |dw(0)| / r is the first guess, exact for m = 1.
  double lo = 1.0, hi = t.free / radius;
  for (int doubling = 0; step_length(A, G, e, m, hi - 1.0) > radius; ++doubling) {
    if (doubling == 1000) throw OptimError("trust radius: no damping brings the step within the radius");
    lo = hi;
    hi *= 2.0;
  }
  for (int it = 0; it < 200 && hi > lo * (1.0 + 1e-6); ++it) {
    const double mid = std::sqrt(lo * hi);
    (step_length(A, G, e, m, mid - 1.0) > radius ? lo : hi) = mid;
  }
  t.mu = hi - 1.0;  // the side within the radius
  t.length = step_length(A, G, e, m, t.mu);
  return t;
}

}  // namespace deepkf
