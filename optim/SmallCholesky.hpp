#pragma once
// The m x m algebra of the joint Kalman update (optim/KalmanFilter.hpp, update_joint): A = C C^T for the
// symmetric positive definite innovation matrix A, with m at most packed::kMaxJoint, on the host. Plain
// loops in a fixed order, so every rank computes the same bits from the same A.
#include <cstdint>
#include <vector>

namespace deepkf {

class SmallCholesky {
 public:
  // Factors A (m x m, row-major; the lower triangle is read). ok() is false when a pivot is not positive
  // and finite: A is then not positive definite.
  SmallCholesky(const std::vector<double>& A, std::int64_t m);
  bool ok() const { return ok_; }
  // C^-1 (row-major, lower triangular), by forward substitution on the columns of the identity.
  std::vector<double> lower_inverse() const;
  // x = A^-1 b = C^-T C^-1 b.
  std::vector<double> solve(const std::vector<double>& b) const;

 private:
  std::int64_t m_;
  std::vector<double> C_;  // lower triangular, row-major
  bool ok_ = true;
};

}  // namespace deepkf
