#include "optim/PackedSweep.hpp"

#include <algorithm>

namespace deepkf::packed {

namespace {

constexpr std::int64_t kMaxChunks = 64;
constexpr std::int64_t kChunkElements = std::int64_t{1} << 17;

// p <- (p - (K_r / a) K_c) / lambda, rounded to T. One expression used by the sweep and the flush alike.
template <typename T>
inline T updated(T p, double kr_over_a, double kc, double inv_lambda) {
  return static_cast<T>((static_cast<double>(p) - kr_over_a * kc) * inv_lambda);
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

template <typename T>
void sweep_rows(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update,
                const double* h, double* y) {
  double* yc = y - r0;  // yc[c] is column c
  for (std::int64_t r = r0; r < r1; ++r) {
    T* row = P + row_offset(n, r) - r;  // row[c] = p_rc for c >= r
    const double hr = h[r];
    double acc;
    if (update.K) {
      const double* K = update.K;
      const double kr = K[r] * update.inv_a;
      const double il = update.inv_lambda;
      const T d = updated(row[r], kr, K[r], il);
      row[r] = d;
      acc = static_cast<double>(d) * hr;
#pragma omp simd reduction(+ : acc)
      for (std::int64_t c = r + 1; c < n; ++c) {
        const T p = updated(row[c], kr, K[c], il);
        row[c] = p;
        acc += static_cast<double>(p) * h[c];  // y_r += p_rc h_c
        yc[c] += static_cast<double>(p) * hr;  // y_c += p_rc h_r
      }
    } else {
      acc = static_cast<double>(row[r]) * hr;
#pragma omp simd reduction(+ : acc)
      for (std::int64_t c = r + 1; c < n; ++c) {
        const double p = static_cast<double>(row[c]);
        acc += p * h[c];
        yc[c] += p * hr;
      }
    }
    yc[r] += acc;
  }
}

template <typename T>
void update_rows(T* P, std::int64_t n, std::int64_t r0, std::int64_t r1, const RankOneUpdate& update) {
  const double* K = update.K;
  const double il = update.inv_lambda;
  for (std::int64_t r = r0; r < r1; ++r) {
    T* row = P + row_offset(n, r) - r;
    const double kr = K[r] * update.inv_a;
#pragma omp simd
    for (std::int64_t c = r; c < n; ++c) row[c] = updated(row[c], kr, K[c], il);
  }
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

template void sweep_rows<float>(float*, std::int64_t, std::int64_t, std::int64_t, const RankOneUpdate&,
                                const double*, double*);
template void sweep_rows<double>(double*, std::int64_t, std::int64_t, std::int64_t, const RankOneUpdate&,
                                 const double*, double*);
template void update_rows<float>(float*, std::int64_t, std::int64_t, std::int64_t, const RankOneUpdate&);
template void update_rows<double>(double*, std::int64_t, std::int64_t, std::int64_t, const RankOneUpdate&);
template void unpack<float>(const float*, std::int64_t, float*);
template void unpack<double>(const double*, std::int64_t, double*);
template void pack<float>(const float*, std::int64_t, float*);
template void pack<double>(const double*, std::int64_t, double*);

}  // namespace deepkf::packed
