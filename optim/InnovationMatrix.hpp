#pragma once
// The m x m innovation covariance of a joint Kalman update (docs/rlekf.md, "Joint measurement update" and
// "Noise by share"), assembled from the per-block terms H_i^T P_i H_i that the sweeps computed.
#include <cstdint>
#include <vector>

namespace deepkf {

struct InnovationMatrix {
  std::vector<double> A;  // row-major m x m, symmetric positive definite for a valid P
  std::vector<double> q;  // q_k = h_k^T P h_k, the quadratic form of each measurement
};

// A = sum_i (lambda I + H_i^T P_i H_i), summed in block order (terms: `blocks` row-major m x m blocks, one
// after the other, every rank's copy the same after the reduction) and symmetrised. Noise by share: where
// shares[k] = s > 0 and q_k > 0, A_kk = q_k / s, the noise q_k (1 / s - 1) in place of L lambda (L = blocks).
// `shares` empty: none. With `cap` a share is an upper bound instead (docs/rlekf.md, "Share cap"): A_kk =
// max(A_kk, q_k / s), the larger of the two noises, so that the measurement removes at most the fraction s.
// The sums run in a fixed order, so that every rank gets the same bits.
InnovationMatrix innovation_matrix(const std::vector<double>& terms, std::size_t blocks, std::int64_t m,
                                   double lambda, const std::vector<double>& shares, bool cap = false);

}  // namespace deepkf
