#pragma once
// The CPU kernel of the joint (vector) measurement update (docs/rlekf.md, "Joint measurement update"):
// the packed sweep of optim/PackedSweep.hpp with m vectors at once and a pending update of rank m.
// Torch-free: raw pointers, no allocation, no threads; PackedCovariance schedules row ranges over threads.
//
// A joint Kalman step leaves P <- (P - U U^T) / lambda pending, U an n x m matrix; the next sweep applies it
// to each stored element and multiplies by the next step's m vectors while the element is in registers:
//   p_rc <- (p_rc - sum_k U_rk U_ck) / lambda
//   Y_rk += p_rc H_ck ;  Y_ck += p_rc H_rk   (c > r)        for k = 0 .. m-1
// which is Y = P_new H over the whole symmetric block: one read and one write of the triangle for all m
// columns. Matrices of m columns are stored column after column (column k of H at H + k * ld), so that the
// loop over c reads each column contiguously. A float64 block is updated and multiplied in float64, a
// float32 block in float32 (U and H rounded to float32 first, this range's share of Y summed in float32 and
// then added to the float64 Y): half the vector instructions per element of float64 arithmetic on
// converted values, and an element enters the products as stored.
#include <cstdint>

namespace deepkf::packed {

// The most vectors one joint sweep takes (the kernel is compiled for each m up to it).
constexpr int kMaxJoint = 16;

// The deferred update P <- (P - U U^T) / lambda with U of q columns (column k at U + k * ld, indexed like the
// block's rows). A sweep always runs the update: with none pending the caller passes U = 0 and lambda = 1,
// which leaves every value as it is and keeps the products on the same instructions as after an update, so
// a sweep after a flush equals a sweep that applies the update bit for bit.
struct RankUpdate {
  const double* U = nullptr;
  std::int64_t ld = 0;
  int q = 0;
  double inv_lambda = 1.0;
};

// m columns of n values (column k at X + k * ld).
template <typename V>
struct Columns {
  V* X = nullptr;
  std::int64_t ld = 0;
};

// Rows [r0, r1) of the joint sweep over packed block P (n x n) with m vectors H (1 <= m <= kMaxJoint).
// Applies `update` first; its rank q must equal m (OptimError otherwise: the caller flushes a pending
// update of another rank, or passes zeros for none). Adds this range's share of Y = P H to Y, whose columns
// hold rows r0 .. n-1 (Y column k's first value is row r0: a partial sum covering what these rows touch).
// Rows are taken four at a time, each column's H, U and Y values loaded once for four rows of P (float32
// rows of at most 1,024 values one at a time); the summation order depends on r0, r1, n and m only.
// `diagonal`, where not null, receives each row's diagonal value as stored after the update (diagonal[r]
// for r in [r0, r1): indexed by the block's row), so that the diagonal can be read without a pass over P.
void joint_sweep_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
                      Columns<const double> H, int m, Columns<double> Y, double* diagonal = nullptr);
void joint_sweep_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
                      Columns<const double> H, int m, Columns<double> Y, double* diagonal = nullptr);

// Rows [r0, r1) of the update alone (a flush): the joint sweep with H = 0, so that each element is updated
// by the same instructions as inside a sweep and a flushed block equals one updated in a sweep bit for bit.
// Allocates (m + 1) n doubles.
void joint_update_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update);
void joint_update_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update);

}  // namespace deepkf::packed
