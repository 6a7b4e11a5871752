#pragma once
// The CPU kernels of the packed covariance (docs/rlekf.md, "One sweep per step"). Torch-free: raw pointers,
// no allocation, no threads; the caller (PackedCovariance) schedules row ranges over threads.
//
// A symmetric n x n block P is stored as its upper triangle, packed row by row: row r holds p_rc for
// c = r .. n-1 and starts at row_offset(n, r) = r n - r (r - 1) / 2; n (n + 1) / 2 values in all.
//
// One sweep applies the rank-1 update left pending by the previous Kalman step and multiplies by the new h
// while each element is in registers, so every element is read once and written once:
//   p_rc <- (p_rc - K_r K_c / a) / lambda
//   y_r  += p_rc h_c ;  y_c += p_rc h_r   (c > r)
// which is y = P_new h over the whole symmetric block. Products and sums are accumulated in float64 for
// float32 blocks too; an updated float32 element enters the products as computed, before it is rounded for
// storage.
#include <cstdint>
#include <vector>

namespace deepkf::packed {

// Values in the packed upper triangle of an n x n matrix.
constexpr std::int64_t triangle_size(std::int64_t n) { return n * (n + 1) / 2; }
// Position of p_rr, the first value of row r.
constexpr std::int64_t row_offset(std::int64_t n, std::int64_t r) { return r * n - r * (r - 1) / 2; }

// The deferred update P <- (P - K K^T / a) / lambda, as K (n values), 1/a and 1/lambda. With K null there
// is none and the sweep only reads P.
struct RankOneUpdate {
  const double* K = nullptr;
  double inv_a = 0.0;
  double inv_lambda = 1.0;
};

// Row ranges [rows[k], rows[k+1]) of about equal element counts covering [0, n), at most 16 of them, none
// smaller than about 2^18 elements unless the block is. They depend on n only, so the partial sums, and with
// them the rounding of y, do not depend on the number of threads.
std::vector<std::int64_t> row_chunks(std::int64_t n);

// Rows [r0, r1) of the sweep over packed block P (n x n). Adds this range's share of y = P h to y, which
// holds columns r0 .. n-1 (y[0] is column r0: a partial sum covering exactly what these rows touch).
// Applies `update` to the rows first when it has a K. Rows are taken eight at a time, so that each column's
// h_c, K_c and y_c are loaded once for eight values of P; the summation order depends on r0, r1 and n only.
void sweep_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update,
                const double* h, double* y);
void sweep_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update,
                const double* h, double* y);

// Rows [r0, r1) of the update alone (a flush before P is read): sweep_rows with h = 0, so that each element
// is updated by the same instructions as in a sweep over the same rows and a flushed block equals one
// updated inside a sweep bit for bit. Costs a sweep's arithmetic; allocates 2n doubles.
void update_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update);
void update_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update);

// Rows [r0, r1) of P <- S P S, S = diag(s): p_rc <- s_r s_c p_rc. A congruence, so P stays positive
// definite; it caps the covariance's diagonal (PackedCovariance::cap_diagonal).
void scale_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* s);
void scale_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* s);

// Full symmetric n x n (row-major) from the packed triangle, and back (the upper triangle is taken).
template <typename T>
void unpack(const T* P, std::int64_t n, T* dense);
template <typename T>
void pack(const T* dense, std::int64_t n, T* P);

}  // namespace deepkf::packed
