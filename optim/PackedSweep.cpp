#include "optim/PackedSweep.hpp"

#include <algorithm>
#include <vector>

// Fused multiply-adds are allowed here (the compiler contracts where the clone's instruction set has
// them): the flush (update_rows) runs the sweep itself with h = 0, so an element is updated by the same
// instructions whether the update is applied in a sweep or in a flush, and rounds alike.
#include "optim/TargetClones.hpp"

namespace deepkf::packed {

namespace {

constexpr std::int64_t kMaxChunks = 16;
constexpr std::int64_t kChunkElements = std::int64_t{1} << 18;

// Element (r, c) of a row, returned as float64. When kUpdate it is first updated,
//   p <- (p - (K_r / a) K_c) / lambda   (in float64; the subtraction may be fused with the product),
// and stored rounded to T. The value returned is the float64 one before that rounding: for float32 blocks
// this saves converting the stored value back (conversions are much of that sweep's arithmetic: the step is
// 5 to 14% faster without it), and the product differs from one with the stored value by float32 rounding.
template <typename T, bool kUpdate>
DEEPKF_INLINE double element(T* row, std::int64_t c, double kr, const double* K, double il) {
  if constexpr (kUpdate) {
    const double p = (static_cast<double>(row[c]) - kr * K[c]) * il;
    row[c] = static_cast<T>(p);
    return p;
  } else {
    return static_cast<double>(row[c]);
  }
}

// One row r alone: y_r += sum_{c >= r} p_rc h_c, y_c += p_rc h_r for c > r. Used for the last rows of a
// range (at most seven), so it is not worth vectorising (GCC does not, here).
template <typename T, bool kUpdate>
DEEPKF_INLINE void sweep_row(T* P, std::int64_t n, std::int64_t r, const RankOneUpdate& u, const double* h,
                             double* yc) {
  T* row = P + row_offset(n, r) - r;  // row[c] = p_rc for c >= r
  const double* K = u.K;
  const double hr = h[r];
  const double kr = kUpdate ? K[r] * u.inv_a : 0.0;
  const double il = u.inv_lambda;
  const double diagonal = element<T, kUpdate>(row, r, kr, K, il) * hr;
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t c = r + 1; c < n; ++c) {
    const double p = element<T, kUpdate>(row, c, kr, K, il);
    acc += p * h[c];  // y_r += p_rc h_c
    yc[c] += p * hr;  // y_c += p_rc h_r
  }
  yc[r] += diagonal + acc;
}

// Rows r .. r+7 together: their 8 x 8 corner one row at a time, then the columns c >= r + 8 that all eight
// share, where h_c, K_c and y_c are loaded once for eight values of P (eight rows measured 10% faster than
// four on one core; the loop is then limited by the core's memory bandwidth for float64).
template <typename T, bool kUpdate>
DEEPKF_INLINE void sweep_eight_rows(T* P, std::int64_t n, std::int64_t r, const RankOneUpdate& u,
                                    const double* h, double* yc) {
  constexpr int R = 8;
  const double* K = u.K;
  const double il = u.inv_lambda;
  T* rows[R];
  double kr[R], corner[R];
  for (int i = 0; i < R; ++i) {
    rows[i] = P + row_offset(n, r + i) - (r + i);  // rows[i][c] = p_{r+i,c} for c >= r + i
    kr[i] = kUpdate ? K[r + i] * u.inv_a : 0.0;
  }
  // The next eight rows begin far from where these end: fetch their first lines now, so that they do not
  // start as eight cache misses at once (1 to 3% of a float32 step at b = 2048).
  if (r + 2 * R <= n) {
    for (int i = 0; i < R; ++i) {
      const char* start = reinterpret_cast<const char*>(P + row_offset(n, r + R + i));
      for (int line = 0; line < 8; ++line) __builtin_prefetch(start + 64 * line, 1, 3);
    }
  }
  for (int i = 0; i < R; ++i) {
    const double hi = h[r + i];
    double acc = element<T, kUpdate>(rows[i], r + i, kr[i], K, il) * hi;
    for (std::int64_t c = r + i + 1; c < r + R; ++c) {
      const double p = element<T, kUpdate>(rows[i], c, kr[i], K, il);
      acc += p * h[c];
      yc[c] += p * hi;
    }
    corner[i] = acc;
  }
  // Scalars for the vectorised loop.
  T *p0 = rows[0], *p1 = rows[1], *p2 = rows[2], *p3 = rows[3], *p4 = rows[4], *p5 = rows[5], *p6 = rows[6],
    *p7 = rows[7];
  const double k0 = kr[0], k1 = kr[1], k2 = kr[2], k3 = kr[3], k4 = kr[4], k5 = kr[5], k6 = kr[6], k7 = kr[7];
  const double h0 = h[r], h1 = h[r + 1], h2 = h[r + 2], h3 = h[r + 3], h4 = h[r + 4], h5 = h[r + 5],
               h6 = h[r + 6], h7 = h[r + 7];
  double b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0, b4 = 0.0, b5 = 0.0, b6 = 0.0, b7 = 0.0;
  // Eight columns per vector iteration. Left to itself GCC takes 16 for float32 rows in the AVX-512 build
  // (two 512-bit vectors of float64 per row); with 8 it uses 256-bit vectors, and the float32 step is 8 to
  // 10% faster, float64 2 to 6% (measured, docs/benchmarks.md "Eight columns per iteration"); 4 is slower.
#pragma omp simd simdlen(8) reduction(+ : b0, b1, b2, b3, b4, b5, b6, b7)
  for (std::int64_t c = r + R; c < n; ++c) {
    const double hc = h[c];
    const double q0 = element<T, kUpdate>(p0, c, k0, K, il);
    const double q1 = element<T, kUpdate>(p1, c, k1, K, il);
    const double q2 = element<T, kUpdate>(p2, c, k2, K, il);
    const double q3 = element<T, kUpdate>(p3, c, k3, K, il);
    const double q4 = element<T, kUpdate>(p4, c, k4, K, il);
    const double q5 = element<T, kUpdate>(p5, c, k5, K, il);
    const double q6 = element<T, kUpdate>(p6, c, k6, K, il);
    const double q7 = element<T, kUpdate>(p7, c, k7, K, il);
    b0 += q0 * hc;  // y_r += p_rc h_c for the eight rows
    b1 += q1 * hc;
    b2 += q2 * hc;
    b3 += q3 * hc;
    b4 += q4 * hc;
    b5 += q5 * hc;
    b6 += q6 * hc;
    b7 += q7 * hc;
    yc[c] +=
        (q0 * h0 + q1 * h1 + q2 * h2 + q3 * h3) + (q4 * h4 + q5 * h5 + q6 * h6 + q7 * h7);  // y_c += p_rc h_r
  }
  const double b[R] = {b0, b1, b2, b3, b4, b5, b6, b7};
  for (int i = 0; i < R; ++i) yc[r + i] += corner[i] + b[i];
}

template <typename T, bool kUpdate>
DEEPKF_INLINE void sweep_range(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& u,
                               const double* h, double* y) {
  double* yc = y - r0;  // yc[c] is column c
  std::int64_t r = r0;
  for (; r + 8 <= r1; r += 8) sweep_eight_rows<T, kUpdate>(P, n, r, u, h, yc);
  for (; r < r1; ++r) sweep_row<T, kUpdate>(P, n, r, u, h, yc);
}

template <typename T>
DEEPKF_INLINE void scale_range(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* s) {
  for (std::int64_t r = r0; r < r1; ++r) {
    T* row = P + row_offset(n, r) - r;
    const double sr = s[r];
#pragma omp simd
    for (std::int64_t c = r; c < n; ++c) row[c] = static_cast<T>(static_cast<double>(row[c]) * (sr * s[c]));
  }
}

// With a pending update the sweep reads and writes P; without one it only reads it.
template <typename T>
DEEPKF_INLINE void sweep_any(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& u,
                             const double* h, double* y) {
  if (u.K) {
    sweep_range<T, true>(P, n, r0, r1, u, h, y);
  } else {
    sweep_range<T, false>(P, n, r0, r1, u, h, y);
  }
}

// One function per dtype: each is built for the instruction sets its DEEPKF_CLONES names.
DEEPKF_CLONES void sweep_f64(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                             const RankOneUpdate& u, const double* h, double* y) {
  sweep_any(P, n, r0, r1, u, h, y);
}

DEEPKF_CLONES_F32 void sweep_f32(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const RankOneUpdate& u, const double* h, double* y) {
  sweep_any(P, n, r0, r1, u, h, y);
}

DEEPKF_CLONES void scale_f64(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* s) {
  scale_range(P, n, r0, r1, s);
}

DEEPKF_CLONES_F32 void scale_f32(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const double* s) {
  scale_range(P, n, r0, r1, s);
}

}  // namespace

std::vector<std::int64_t> row_chunks(std::int64_t n) {
  const std::int64_t total = triangle_size(n);
  const std::int64_t chunks = std::clamp<std::int64_t>(total / kChunkElements, 1, std::min(kMaxChunks, n));
  // Row r ends after row_offset(n, r + 1) elements; cut where that first reaches k / chunks of the total.
  std::vector<std::int64_t> rows{0};
  std::int64_t r = 0;
  for (std::int64_t k = 1; k < chunks; ++k) {
    const std::int64_t target = total * k / chunks;
    while (r < n && row_offset(n, r + 1) < target) ++r;
    if (r + 1 > rows.back() && r + 1 < n) rows.push_back(r + 1);
  }
  rows.push_back(n);
  return rows;
}

void sweep_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update,
                const double* h, double* y) {
  sweep_f64(P, n, r0, r1, update, h, y);
}

void sweep_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update,
                const double* h, double* y) {
  sweep_f32(P, n, r0, r1, update, h, y);
}

namespace {

// The sweep with h = 0: the update alone, through the sweep's own instructions (y comes out zero).
template <typename T>
void update_by_sweep(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update) {
  const std::vector<double> h(static_cast<std::size_t>(n), 0.0);
  std::vector<double> y(static_cast<std::size_t>(n - r0), 0.0);
  sweep_rows(P, n, r0, r1, update, h.data(), y.data());
}

}  // namespace

void update_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update) {
  update_by_sweep(P, n, r0, r1, update);
}

void update_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update) {
  update_by_sweep(P, n, r0, r1, update);
}

void scale_rows(double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* s) {
  scale_f64(P, n, r0, r1, s);
}

void scale_rows(float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* s) {
  scale_f32(P, n, r0, r1, s);
}

template <typename T>
void unpack(const T* P, std::int64_t n, T* dense) {
  for (std::int64_t r = 0; r < n; ++r) {
    const T* row = P + row_offset(n, r) - r;
    for (std::int64_t c = r; c < n; ++c) dense[r * n + c] = dense[c * n + r] = row[c];
  }
}

template <typename T>
void pack(const T* dense, std::int64_t n, T* P) {
  for (std::int64_t r = 0; r < n; ++r)
    std::copy(dense + r * n + r, dense + (r + 1) * n, P + row_offset(n, r));
}

template void unpack<float>(const float*, std::int64_t, float*);
template void unpack<double>(const double*, std::int64_t, double*);
template void pack<float>(const float*, std::int64_t, float*);
template void pack<double>(const double*, std::int64_t, double*);

}  // namespace deepkf::packed
