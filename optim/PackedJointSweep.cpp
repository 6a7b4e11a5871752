#include "optim/PackedJointSweep.hpp"

#include <algorithm>
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

constexpr int kWidth = 8;  // columns per vector

constexpr int kRows = 4;  // rows sharing each column's loads

// float32 rows no longer than this are taken one at a time: with float32 arithmetic, four short rows at once
// (four streams through P starting every few KiB) ran slower out of the caches than one row at a time on an
// AMD EPYC, and four long rows faster (docs/benchmarks.md, "The float32 joint sweep in float32").
constexpr std::int64_t kShortRowF32 = 1024;

// Eight lanes of S (GCC's vector extension): float64 in AVX-512 registers or two AVX2 ones, float32 in one
// AVX2 register.
typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
template <typename S>
using Vec8 = std::conditional_t<std::is_same_v<S, double>, v8d, v8f>;

template <typename S>
DEEPKF_INLINE Vec8<S> load8(const S* p) {
  Vec8<S> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename S>
DEEPKF_INLINE void store8(S* p, Vec8<S> v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename S>
DEEPKF_INLINE S lane_sum(Vec8<S> v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// The row-level data of one row r: its U_rk (the update's row factors) and H_rk.
template <typename S, int M>
struct RowFactors {
  S u[M];
  S h[M];
};

// The operands of one row range in the arithmetic type S (the block's own type): U, H and Y with columns
// indexed by the block's row (U + k * ldu + c is U_ck, likewise H and Y); D, where not null, receives each
// row's stored diagonal value p_rr (D[r]).
template <typename S>
struct Operands {
  const S* U;
  std::int64_t ldu;
  S il;
  const S* H;
  std::int64_t ldh;
  S* Y;
  std::int64_t ldy;
  double* D;
};

// Element (r, c) updated, p <- (p - sum_k U_rk U_ck) / lambda, and stored.
template <typename S, int M>
DEEPKF_INLINE S element(S* row, std::int64_t c, const RowFactors<S, M>& f, const Operands<S>& o) {
  S p = row[c];
#pragma GCC unroll 16
  for (int k = 0; k < M; ++k) p -= f.u[k] * o.U[k * o.ldu + c];
  p *= o.il;
  row[c] = p;
  return p;
}

// Eight shared columns c .. c+7 of R rows: p_rc <- (p_rc - sum_k U_rk U_ck) / lambda, stored; then
// Y_rk += p_rc H_ck (into vacc) and Y_ck += p_rc H_rk.
template <typename S, int M, int R>
DEEPKF_INLINE void columns8(S* const* rows, std::int64_t c, const RowFactors<S, M>* f, const Operands<S>& o,
                            Vec8<S> (&vacc)[R][M]) {
  using V = Vec8<S>;
  V q[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) q[i] = load8(rows[i] + c);
#pragma GCC unroll 16
  for (int k = 0; k < M; ++k) {
    const V uk = load8(o.U + k * o.ldu + c);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) q[i] -= f[i].u[k] * uk;
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    q[i] *= o.il;
    store8(rows[i] + c, q[i]);
  }
#pragma GCC unroll 16
  for (int k = 0; k < M; ++k) {
    const V hk = load8(o.H + k * o.ldh + c);
    V y = load8(o.Y + k * o.ldy + c);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      vacc[i][k] += q[i] * hk;
      y += q[i] * f[i].h[k];
    }
    store8(o.Y + k * o.ldy + c, y);
  }
}

// R consecutive rows r .. r+R-1 (R = kRows, or 1 for short float32 rows and the last rows of a range): their
// R x R corner element by element, then the columns c >= r + R they share, eight at a time, then the last
// columns one at a time.
template <typename S, int M, int R>
DEEPKF_INLINE void joint_rows(S* P, std::int64_t n, std::int64_t r, const Operands<S>& o) {
  using V = Vec8<S>;
  const S* U = o.U;
  const S* H = o.H;
  S* yc = o.Y;
  S* rows[R];
  RowFactors<S, M> f[R];
  S acc[R][M];  // Y_{r+i,k} over the corner and the scalar tail
  for (int i = 0; i < R; ++i) {
    rows[i] = P + row_offset(n, r + i) - (r + i);  // rows[i][c] = p_{r+i,c} for c >= r + i
    for (int k = 0; k < M; ++k) {
      f[i].u[k] = U[k * o.ldu + r + i];
      f[i].h[k] = H[k * o.ldh + r + i];
      acc[i][k] = 0;
    }
  }
  // The corner: y_r += p_rr h_r on the diagonal, both products off it.
  for (int i = 0; i < R; ++i) {
    for (std::int64_t c = r + i; c < r + R; ++c) {
      const S p = element<S, M>(rows[i], c, f[i], o);
      if (c == r + i && o.D != nullptr) o.D[c] = static_cast<double>(p);
      for (int k = 0; k < M; ++k) {
        if (c == r + i) {
          acc[i][k] += p * f[i].h[k];
        } else {
          acc[i][k] += p * H[k * o.ldh + c];
          yc[k * o.ldy + c] += p * f[i].h[k];
        }
      }
    }
  }
  // Shared columns, eight per iteration.
  V vacc[R][M];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) vacc[i][k] = V{};
  }
  std::int64_t c = r + R;
  for (; c + kWidth <= n; c += kWidth) columns8<S, M, R>(rows, c, f, o, vacc);
  for (; c < n; ++c) {
    for (int i = 0; i < R; ++i) {
      const S p = element<S, M>(rows[i], c, f[i], o);
      for (int k = 0; k < M; ++k) {
        acc[i][k] += p * H[k * o.ldh + c];
        yc[k * o.ldy + c] += p * f[i].h[k];
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int k = 0; k < M; ++k) yc[k * o.ldy + r + i] += acc[i][k] + lane_sum<S>(vacc[i][k]);
  }
}

// Always through the update's instructions: with U = 0 and lambda = 1 they leave every value as it is, and
// the products then run through the same instructions as after a real update. (Compiled separately, a
// read-only variant rounded its products differently at -O3: GCC contracted other multiply-adds.)
template <typename S, int M>
DEEPKF_INLINE void joint_range(S* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const Operands<S>& o) {
  std::int64_t r = r0;
  const std::int64_t short_row = std::is_same_v<S, float> ? kShortRowF32 : 0;
  for (; r + kRows <= r1 && n - r > short_row; r += kRows) joint_rows<S, M, kRows>(P, n, r, o);
  for (; r < r1; ++r) joint_rows<S, M, 1>(P, n, r, o);
}

// One function per dtype and m, each built for the instruction sets its clones name.
template <int M>
DEEPKF_CLONES_F32 void joint_f64(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const Operands<double>& o) {
  joint_range<double, M>(P, n, r0, r1, o);
}

template <int M>
DEEPKF_CLONES_F32 void joint_f32(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const Operands<float>& o) {
  joint_range<float, M>(P, n, r0, r1, o);
}

template <typename S>
using JointKernel = void (*)(S*, std::int64_t, std::int64_t, std::int64_t, const Operands<S>&);

template <typename S, int... Ms>
constexpr auto kernel_table(std::integer_sequence<int, Ms...>) {
  if constexpr (std::is_same_v<S, double>) {
    return std::array<JointKernel<S>, sizeof...(Ms)>{&joint_f64<Ms + 1>...};
  } else {
    return std::array<JointKernel<S>, sizeof...(Ms)>{&joint_f32<Ms + 1>...};
  }
}

void check(const RankUpdate& update, int m) {
  if (m < 1 || m > kMaxJoint)
    throw OptimError("joint sweep: " + std::to_string(m) + " vectors (1 to " + std::to_string(kMaxJoint) +
                     " supported)");
  if (update.q != m || update.U == nullptr)
    throw OptimError("joint sweep: a pending update of rank " + std::to_string(update.q) + " with " +
                     std::to_string(m) + " vectors (pass U = 0 for none; flush one of another rank first)");
}

template <typename S>
JointKernel<S> kernel(int m) {
  static const auto table = kernel_table<S>(std::make_integer_sequence<int, kMaxJoint>{});
  return table[static_cast<std::size_t>(m - 1)];
}

void dispatch(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
              Columns<const double> H, int m, Columns<double> Y, double* diagonal) {
  check(update, m);
  const Operands<double> o{update.U, update.ld, update.inv_lambda, H.X, H.ld, Y.X - r0, Y.ld, diagonal};
  kernel<double>(m)(P, n, r0, r1, o);
}

// float32 blocks are updated and multiplied in float32: U and H (columns r0 .. n-1) are rounded to float32
// first, and this range's share of Y is summed in float32 and then added to the float64 Y. Arithmetic of
// the stored type halves the instructions per element against float64 arithmetic on converted values.
void dispatch(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
              Columns<const double> H, int m, Columns<double> Y, double* diagonal) {
  check(update, m);
  const std::int64_t len = n - r0;
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<std::size_t>(3 * m * len));
  float* u = buffer.data();
  float* h = u + m * len;
  float* y = h + m * len;
  std::fill(y, y + m * len, 0.0f);  // u and h are written in full below
  for (int k = 0; k < m; ++k) {
    for (std::int64_t c = 0; c < len; ++c) {
      u[k * len + c] = static_cast<float>(update.U[k * update.ld + r0 + c]);
      h[k * len + c] = static_cast<float>(H.X[k * H.ld + r0 + c]);
    }
  }
  const Operands<float> o{u - r0, len,     static_cast<float>(update.inv_lambda), h - r0, len, y - r0,
                          len,    diagonal};
  kernel<float>(m)(P, n, r0, r1, o);
  for (int k = 0; k < m; ++k) {
    for (std::int64_t c = 0; c < len; ++c) Y.X[k * Y.ld + c] += static_cast<double>(y[k * len + c]);
  }
}

// The sweep with H = 0 (of the update's rank): the update alone, through the sweep's own instructions.
template <typename T>
void update_by_sweep(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update) {
  if (update.q == 0) return;
  const auto m = static_cast<std::size_t>(update.q);
  const std::vector<double> h(m * static_cast<std::size_t>(n), 0.0);
  std::vector<double> y(m * static_cast<std::size_t>(n - r0), 0.0);
  dispatch(P, n, r0, r1, update, {h.data(), n}, update.q, {y.data(), n - r0}, nullptr);
}

}  // namespace

void joint_sweep_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
                      Columns<const double> H, int m, Columns<double> Y, double* diagonal) {
  dispatch(P, n, r0, r1, update, H, m, Y, diagonal);
}

void joint_sweep_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update,
                      Columns<const double> H, int m, Columns<double> Y, double* diagonal) {
  dispatch(P, n, r0, r1, update, H, m, Y, diagonal);
}

void joint_update_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                       const RankUpdate& update) {
  update_by_sweep(P, n, r0, r1, update);
}

void joint_update_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankUpdate& update) {
  update_by_sweep(P, n, r0, r1, update);
}

}  // namespace deepkf::packed
