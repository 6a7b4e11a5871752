#pragma once
// A bound on the joint Kalman update's weight change (docs/rlekf.md, "Trust radius"): the noise of every
// measurement is raised, Levenberg-Marquardt style, until |dw| is within a radius r.
//
// With Y = P H (the sweep's columns), A the m x m innovation matrix and G = Y^T Y (m x m):
//   A_mu = A + mu diag(A),   c(mu) = A_mu^-1 e,   dw(mu) = Y c(mu),   |dw(mu)|^2 = c^T G c
// mu = 0 when |dw(0)| <= r; otherwise the mu > 0 with |dw(mu)| = r (to a relative 1e-6). Raising every
// A_kk by the factor 1 + mu is a Kalman update with the larger noise R + mu diag(A), so P's update stays
// the one of that noise. Plain loops on the host, so every rank gets the same bits.
#include <cstdint>
#include <vector>

namespace deepkf {

struct TrustStep {
  double mu = 0.0;      // the damping chosen
  double length = 0.0;  // |dw(mu)|
  double free = 0.0;    // |dw(0)|, the undamped step's length
};

// A, G: row-major m x m, A positive definite, G positive semidefinite; e: m innovations; radius > 0.
// OptimError when A is not positive definite.
TrustStep trust_step(const std::vector<double>& A, const std::vector<double>& G, const std::vector<double>& e,
                     std::int64_t m, double radius);

// A + mu diag(A).
std::vector<double> damped(const std::vector<double>& A, std::int64_t m, double mu);

}  // namespace deepkf
