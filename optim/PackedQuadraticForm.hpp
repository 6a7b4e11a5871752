#pragma once
// The CPU kernel of the covariance's quadratic forms q_k = h_k^T P h_k for m vectors h_k at once
// (docs/uncertainty.md). Torch-free like optim/PackedSweep.hpp: raw pointers, no allocation, no threads.
//
// P is a symmetric n x n block stored as its packed upper triangle (PackedSweep.hpp). With t_rk the sum over
// the row right of the diagonal,
//   q_k = sum_r h_rk (p_rr h_rk + 2 t_rk),   t_rk = sum_{c > r} p_rc h_ck,
// so each stored value is read once for all m vectors and never written. The vectors are given
// parameter-major, H[c m + k] = h_ck, so that the m values a stored p_rc multiplies are contiguous. Products
// and sums are in float64 for float32 blocks too.
#include <cstdint>

namespace deepkf::packed {

// Adds rows [r0, r1) of block P's share of every q_k to q[0 .. m). H: n x m values (parameter-major). Rows
// are taken four at a time and the vectors eight at a time, so that each h_c is loaded once for four values
// of P; the summation order depends on n, m, r0 and r1 only.
void quadratic_form_rows(const double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* H,
                         std::int64_t m, double* q);
void quadratic_form_rows(const float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* H,
                         std::int64_t m, double* q);

}  // namespace deepkf::packed
