#include "optim/PackedQuadraticForm.hpp"

#include "optim/PackedSweep.hpp"
#include "optim/TargetClones.hpp"

namespace deepkf::packed {

namespace {

// Rows r .. r+R-1 and vectors k0 .. k0+W-1:
//   t_ik = sum_{c > r+i} p_{r+i,c} h_ck        (the R x R corner first, then the columns all R rows share)
//   q_k += sum_i h_{r+i,k} (p_{r+i,r+i} h_{r+i,k} + 2 t_ik)
// R and W are compile-time sizes, so that the R x W sums stay in registers and the loop over the W vectors
// is vectorised.
template <int R, int W, typename T>
DEEPKF_INLINE void rows_block(const T* P, std::int64_t n, std::int64_t r, const double* H, std::int64_t m,
                              std::int64_t k0, double* q) {
  const T* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = P + row_offset(n, r + i) - (r + i);  // rows[i][c] = p_{r+i,c}
  double t[R][W] = {};
  // The corner: columns r+i+1 .. r+R-1 of row r+i.
  for (int i = 0; i < R; ++i) {
    for (std::int64_t c = r + i + 1; c < r + R; ++c) {
      const double p = static_cast<double>(rows[i][c]);
      const double* h = H + c * m + k0;
      for (int w = 0; w < W; ++w) t[i][w] += p * h[w];
    }
  }
  // The shared columns: each h_c (W values) is loaded once for R values of P.
  for (std::int64_t c = r + R; c < n; ++c) {
    const double* h = H + c * m + k0;
    double p[R];
    for (int i = 0; i < R; ++i) p[i] = static_cast<double>(rows[i][c]);
#pragma omp simd
    for (int w = 0; w < W; ++w) {
      for (int i = 0; i < R; ++i) t[i][w] += p[i] * h[w];
    }
  }
  for (int i = 0; i < R; ++i) {
    const double diagonal = static_cast<double>(rows[i][r + i]);
    const double* hr = H + (r + i) * m + k0;
    for (int w = 0; w < W; ++w) q[k0 + w] += hr[w] * (diagonal * hr[w] + 2.0 * t[i][w]);
  }
}

// Rows r .. r+R-1 for every vector: eight at a time, then the remaining four, two and one.
template <int R, typename T>
DEEPKF_INLINE void rows_all_vectors(const T* P, std::int64_t n, std::int64_t r, const double* H,
                                    std::int64_t m, double* q) {
  std::int64_t k = 0;
  for (; k + 8 <= m; k += 8) rows_block<R, 8>(P, n, r, H, m, k, q);
  if (k + 4 <= m) {
    rows_block<R, 4>(P, n, r, H, m, k, q);
    k += 4;
  }
  if (k + 2 <= m) {
    rows_block<R, 2>(P, n, r, H, m, k, q);
    k += 2;
  }
  if (k < m) rows_block<R, 1>(P, n, r, H, m, k, q);
}

template <typename T>
DEEPKF_INLINE void rows_range(const T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* H,
                              std::int64_t m, double* q) {
  std::int64_t r = r0;
  for (; r + 4 <= r1; r += 4) rows_all_vectors<4>(P, n, r, H, m, q);
  for (; r < r1; ++r) rows_all_vectors<1>(P, n, r, H, m, q);
}

DEEPKF_CLONES void quadratic_f64(const double* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                 const double* H, std::int64_t m, double* q) {
  rows_range(P, n, r0, r1, H, m, q);
}

DEEPKF_CLONES_F32 void quadratic_f32(const float* P, std::int64_t n, std::int64_t r0, std::int64_t r1,
                                     const double* H, std::int64_t m, double* q) {
  rows_range(P, n, r0, r1, H, m, q);
}

}  // namespace

void quadratic_form_rows(const double* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* H,
                         std::int64_t m, double* q) {
  quadratic_f64(P, n, r0, r1, H, m, q);
}

void quadratic_form_rows(const float* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const double* H,
                         std::int64_t m, double* q) {
  quadratic_f32(P, n, r0, r1, H, m, q);
}

}  // namespace deepkf::packed
