#include "optim/PackedJointSweep.hpp"

#include <array>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "optim/PackedSweep.hpp"
#include "optim/TargetClones.hpp"
#include "src/core/Error.hpp"

// Fused multiply-adds are allowed here, as in PackedSweep.cpp: the flush runs the sweep itself with H = 0,
// so an element is updated by the same instructions in a sweep and in a flush.

namespace deepkf::packed {

namespace {

constexpr int kRows = 4;   // rows sharing each column's loads
constexpr int kWidth = 8;  // columns per vector

// Eight float64 lanes (GCC's vector extension: AVX-512 registers, or two AVX2 ones in that clone).
typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

DEEPKF_INLINE v8d load8(const double* p) {
  v8d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
DEEPKF_INLINE v8d load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, v8d);
}
DEEPKF_INLINE void store8(double* p, v8d v) { std::memcpy(p, &v, sizeof v); }
DEEPKF_INLINE void store8(float* p, v8d v) {
  const v8f f = __builtin_convertvector(v, v8f);
  std::memcpy(p, &f, sizeof f);
}
DEEPKF_INLINE double lane_sum(v8d v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// The row-level data of one row r: its U_rk (the update's row factors) and H_rk.
template <int M>
struct RowFactors {
  double u[M];
  double h[M];
};

// Element (r, c) updated, p <- (p - sum_k U_rk U_ck) / lambda, stored rounded to T; returns the float64 value
// before that rounding (as PackedSweep.cpp's element()).
template <typename T, int M>
DEEPKF_INLINE double element(T* row, std::int64_t c, const RowFactors<M>& f, const double* U,
                             std::int64_t ldu, double il) {
  double p = static_cast<double>(row[c]);
#pragma GCC unroll 16
  for (int k = 0; k < M; ++k) p -= f.u[k] * U[k * ldu + c];
  p *= il;
  row[c] = static_cast<T>(p);
  return p;
}

// R consecutive rows r .. r+R-1 (R = kRows, or 1 for the last rows of a range): their R x R corner element by
// element, then the columns c >= r + R they share, eight at a time, then the last columns one at a time.
// yc: Y with columns indexed by the block's row (yc + k * ldy + c is Y_ck).
template <typename T, int M, int R>
DEEPKF_INLINE void joint_rows(T* P, std::int64_t n, std::int64_t r, const RankUpdate& u, const double* H,
                              std::int64_t ldh, double* yc, std::int64_t ldy) {
  const double* U = u.U;
  const std::int64_t ldu = u.ld;
  const double il = u.inv_lambda;
  T* rows[R];
  RowFactors<M> f[R];
  double acc[R][M];  // Y_{r+i,k} over the corner and the scalar tail
  for (int i = 0; i < R; ++i) {
    rows[i] = P + row_offset(n, r + i) - (r + i);  // rows[i][c] = p_{r+i,c} for c >= r + i
    for (int k = 0; k < M; ++k) {
      f[i].u[k] = U[k * ldu + r + i];
      f[i].h[k] = H[k * ldh + r + i];
      acc[i][k] = 0.0;
    }
  }
  // The corner: y_r += p_rr h_r on the diagonal, both products off it.
  for (int i = 0; i < R; ++i) {
    for (std::int64_t c = r + i; c < r + R; ++c) {
      const double p = element<T, M>(rows[i], c, f[i], U, ldu, il);
      for (int k = 0; k < M; ++k) {
        if (c == r + i) {
          acc[i][k] += p * f[i].h[k];
        } else {
          acc[i][k] += p * H[k * ldh + c];
          yc[k * ldy + c] += p * f[i].h[k];
        }
      }
    }
  }
  // Shared columns, eight per iteration.
  v8d vacc[R][M];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) vacc[i][k] = v8d{};
  }
  std::int64_t c = r + R;
  for (; c + kWidth <= n; c += kWidth) {
    v8d q[R];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) q[i] = load8(rows[i] + c);
      // p_rc <- (p_rc - sum_k U_rk U_ck) / lambda
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) {
      const v8d uk = load8(U + k * ldu + c);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) q[i] -= f[i].u[k] * uk;
    }
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      q[i] *= il;
      store8(rows[i] + c, q[i]);
    }
    // Y_rk += p_rc H_ck ;  Y_ck += p_rc H_rk
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) {
      const v8d hk = load8(H + k * ldh + c);
      v8d y = load8(yc + k * ldy + c);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        vacc[i][k] += q[i] * hk;
        y += q[i] * f[i].h[k];
      }
      store8(yc + k * ldy + c, y);
    }
  }
  for (; c < n; ++c) {
    for (int i = 0; i < R; ++i) {
      const double p = element<T, M>(rows[i], c, f[i], U, ldu, il);
      for (int k = 0; k < M; ++k) {
        acc[i][k] += p * H[k * ldh + c];
        yc[k * ldy + c] += p * f[i].h[k];
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int k = 0; k < M; ++k) yc[k * ldy + r + i] += acc[i][k] + lane_sum(vacc[i][k]);
  }
}

template <typename T, int M>
DEEPKF_INLINE void joint_range(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& u,
                               Columns<const double> H, Columns<double> Y) {
  double* yc = Y.X - r0;  // yc + k * ld + c is Y_ck
  std::int64_t r = r0;
  for (; r + kRows <= r1; r += kRows) joint_rows<T, M, kRows>(P, n, r, u, H.X, H.ld, yc, Y.ld);
  for (; r < r1; ++r) joint_rows<T, M, 1>(P, n, r, u, H.X, H.ld, yc, Y.ld);
}

// Always through the update's instructions: with U = 0 and lambda = 1 they leave every value as it is, and
// the products then run through the same instructions as after a real update. (Compiled separately, a
// read-only variant rounded its products differently at -O3: GCC contracted other multiply-adds.)
template <typename T, int M>
DEEPKF_INLINE void joint_any(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& u,
                             Columns<const double> H, Columns<double> Y) {
  joint_range<T, M>(P, n, r0, r1, u, H, Y);
}

// One function per dtype and m, each built for the instruction sets its clones name.
template <int M>
DEEPKF_CLONES_F32 void joint_f64(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const RankUpdate& u, Columns<const double> H, Columns<double> Y) {
  joint_any<double, M>(P, n, r0, r1, u, H, Y);
}

template <int M>
DEEPKF_CLONES_F32 void joint_f32(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const RankUpdate& u, Columns<const double> H, Columns<double> Y) {
  joint_any<float, M>(P, n, r0, r1, u, H, Y);
}

template <typename T>
using JointKernel = void (*)(T*, std::int64_t, std::int64_t, std::int64_t, const RankUpdate&,
                             Columns<const double>, Columns<double>);

template <typename T, int... Ms>
constexpr auto kernel_table(std::integer_sequence<int, Ms...>) {
  if constexpr (std::is_same_v<T, double>) {
    return std::array<JointKernel<T>, sizeof...(Ms)>{&joint_f64<Ms + 1>...};
  } else {
    return std::array<JointKernel<T>, sizeof...(Ms)>{&joint_f32<Ms + 1>...};
  }
}

template <typename T>
void dispatch(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
              Columns<const double> H, int m, Columns<double> Y) {
  if (m < 1 || m > kMaxJoint)
    throw OptimError("joint sweep: " + std::to_string(m) + " vectors (1 to " + std::to_string(kMaxJoint) +
                     " supported)");
  if (update.q != m || update.U == nullptr)
    throw OptimError("joint sweep: a pending update of rank " + std::to_string(update.q) + " with " +
                     std::to_string(m) + " vectors (pass U = 0 for none; flush one of another rank first)");
  static const auto table = kernel_table<T>(std::make_integer_sequence<int, kMaxJoint>{});
  table[static_cast<std::size_t>(m - 1)](P, n, r0, r1, update, H, Y);
}

// The sweep with H = 0 (of the update's rank): the update alone, through the sweep's own instructions.
template <typename T>
void update_by_sweep(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update) {
  if (update.q == 0) return;
  const auto m = static_cast<std::size_t>(update.q);
  const std::vector<double> h(m * static_cast<std::size_t>(n), 0.0);
  std::vector<double> y(m * static_cast<std::size_t>(n - r0), 0.0);
  dispatch(P, n, r0, r1, update, {h.data(), n}, update.q, {y.data(), n - r0});
}

}  // namespace

void joint_sweep_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
                      Columns<const double> H, int m, Columns<double> Y) {
  dispatch(P, n, r0, r1, update, H, m, Y);
}

void joint_sweep_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
                      Columns<const double> H, int m, Columns<double> Y) {
  dispatch(P, n, r0, r1, update, H, m, Y);
}

void joint_update_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                       const RankUpdate& update) {
  update_by_sweep(P, n, r0, r1, update);
}

void joint_update_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update) {
  update_by_sweep(P, n, r0, r1, update);
}

}  // namespace deepkf::packed
