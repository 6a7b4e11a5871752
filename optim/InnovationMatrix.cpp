#include "optim/InnovationMatrix.hpp"

#include <algorithm>

namespace deepkf {

InnovationMatrix innovation_matrix(const std::vector<double>& terms, std::size_t blocks, std::int64_t m,
                                   double lambda, const std::vector<double>& shares, bool cap) {
  const auto mm = static_cast<std::size_t>(m * m);
  InnovationMatrix r;
  auto& A = r.A;
  A.assign(mm, 0.0);
  for (std::size_t i = 0; i < blocks; ++i) {
    for (std::int64_t a = 0; a < m; ++a) {
      for (std::int64_t b = 0; b < m; ++b) {
        const double t = terms[i * mm + static_cast<std::size_t>(a * m + b)];
        A[static_cast<std::size_t>(a * m + b)] += (a == b ? lambda : 0.0) + t;
      }
    }
  }
  // H_i^T P_i H_i is symmetric up to rounding.
  for (std::int64_t a = 0; a < m; ++a) {
    for (std::int64_t b = 0; b < a; ++b) {
      const double s =
          0.5 * (A[static_cast<std::size_t>(a * m + b)] + A[static_cast<std::size_t>(b * m + a)]);
      A[static_cast<std::size_t>(a * m + b)] = A[static_cast<std::size_t>(b * m + a)] = s;
    }
  }
  // A stays positive definite by share: H^T P H plus a positive diagonal. A measurement without gradient
  // (q_k = 0) keeps L lambda.
  const double noise = static_cast<double>(blocks) * lambda;
  r.q.resize(static_cast<std::size_t>(m));
  for (std::int64_t k = 0; k < m; ++k) {
    double& a_kk = A[static_cast<std::size_t>(k * m + k)];
    const double q = a_kk - noise;
    r.q[static_cast<std::size_t>(k)] = q;
    const double s = shares.empty() ? 0.0 : shares[static_cast<std::size_t>(k)];
    if (s > 0.0 && q > 0.0) a_kk = cap ? std::max(a_kk, q / s) : q / s;
  }
  return r;
}

}  // namespace deepkf
