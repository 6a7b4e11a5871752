// The scalar sweep's kernels (optim/PackedSweepCuda.cuh): the rank-one update and y = P h over the tiles, the
// h^T y and largest diagonal per block, the scaling. The joint sweep's are in optim/PackedJointSweepCuda.cu;
// what both use in optim/PackedCudaKernels.cuh.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "optim/PackedCudaKernels.cuh"
#include "optim/PackedSweepCuda.cuh"

namespace deepkf::packed::cuda {

namespace {

// p <- (p - (K_r / a) K_c) / lambda, rounded to T, with no contraction into fused multiply-adds, so that
// every use of it here rounds alike and a flushed block equals one updated inside a sweep bit for bit. The
// products use the stored (rounded) value, so on the device float32 results do not depend on flushes
// either. (The CPU kernel contracts where it can and multiplies with the value before rounding: the two
// agree to float32 rounding, not bit for bit.)
template <typename T>
__device__ __forceinline__ T updated(T p, double kr_over_a, double kc, double inv_lambda) {
  return static_cast<T>(__dmul_rn(__dsub_rn(static_cast<double>(p), __dmul_rn(kr_over_a, kc)), inv_lambda));
}

// Tile (I, J), J >= I, of a block of n (K, h, rows, cols of that block). With kUpdate, applies the update to
// the tile's elements. With kProduct, writes row partials rows[J n + r] = sum_{c in tile J, c >= r} p_rc h_c
// for the tile's rows r, and column partials cols[I n + c] = sum_{r in tile I, r < c} p_rc h_r for the
// tile's columns c.
template <typename T, bool kUpdate, bool kProduct>
__device__ __forceinline__ void tile(T* P, std::int64_t n, std::int64_t I, std::int64_t J, const double* K,
                                     double inv_a, double inv_lambda, const double* h, double* rows,
                                     double* cols) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = I * kTile, c0 = J * kTile;

  double hc[kCols], kc[kCols], col_acc[kCols];
  for (int q = 0; q < kCols; ++q) {
    const std::int64_t c = c0 + tx + q * kThreadsX;
    hc[q] = (kProduct && c < n) ? h[c] : 0.0;
    kc[q] = (kUpdate && c < n) ? K[c] : 0.0;
    col_acc[q] = 0.0;
  }
  __shared__ double row_sums[kTile];
  __shared__ double col_sums[kThreadsY][kTile];

  for (int k = 0; k < kRows; ++k) {
    const int lr = ty + k * kThreadsY;
    const std::int64_t r = r0 + lr;
    double acc = 0.0;
    if (r < n) {
      T* row = P + row_start(n, r) - r;  // row[c] = p_rc for c >= r
      const double hr = kProduct ? h[r] : 0.0;
      const double kr = kUpdate ? __dmul_rn(K[r], inv_a) : 0.0;
      for (int q = 0; q < kCols; ++q) {
        const std::int64_t c = c0 + tx + q * kThreadsX;
        if (c < r || c >= n) continue;
        T v = row[c];
        if (kUpdate) {
          v = updated(v, kr, kc[q], inv_lambda);
          row[c] = v;
        }
        if (kProduct) {
          const double p = static_cast<double>(v);
          acc += p * hc[q];                 // y_r += p_rc h_c
          if (c > r) col_acc[q] += p * hr;  // y_c += p_rc h_r
        }
      }
    }
    if constexpr (kProduct) {
      for (int off = kThreadsX / 2; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
      if (tx == 0) row_sums[lr] = acc;
    }
  }
  if constexpr (kProduct) {
    for (int q = 0; q < kCols; ++q) col_sums[ty][tx + q * kThreadsX] = col_acc[q];
    __syncthreads();
    const int t = ty * kThreadsX + tx;
    for (int i = t; i < kTile; i += kThreadsX * kThreadsY) {
      if (r0 + i < n) rows[J * n + r0 + i] = row_sums[i];
      if (c0 + i < n) {
        double s = 0.0;
        for (int w = 0; w < kThreadsY; ++w) s += col_sums[w][i];
        cols[I * n + c0 + i] = s;
      }
    }
  }
}

// One thread block per tile of the plan: block t.block's tile (t.I, t.J).
template <typename T, bool kUpdate, bool kProduct>
__global__ void tiles_kernel(void* const* P, const TileBlock* blocks, const Tile* tiles, const double* K,
                             double inv_a, double inv_lambda, const double* h, double* workspace) {
  const Tile t = tiles[blockIdx.x];
  const TileBlock b = blocks[t.block];
  double* rows = kProduct ? workspace + b.workspace : nullptr;
  double* cols = kProduct ? rows + tiles_of(b.n) * b.n : nullptr;
  tile<T, kUpdate, kProduct>(static_cast<T*>(P[t.block]), b.n, t.I, t.J, kUpdate ? K + b.offset : nullptr,
                             inv_a, inv_lambda, kProduct ? h + b.offset : nullptr, rows, cols);
}

// For every flat index g, in block j at row r = g - offset_j: y_g = gathered(rows_j, cols_j, n_j, r).
__global__ void gather_kernel(const TileBlock* blocks, std::int64_t num_blocks, std::int64_t total,
                              const double* workspace, double* y) {
  const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= total) return;
  const TileBlock b = blocks[block_of(blocks, num_blocks, g)];
  const double* rows = workspace + b.workspace;
  y[g] = gathered(rows, rows + tiles_of(b.n) * b.n, b.n, g - b.offset);
}

// out[j] = h_j^T y_j for block j = blockIdx.x: strided partial sums, then a tree, in a fixed order.
__global__ void dots_kernel(const TileBlock* blocks, const double* a, const double* b, double* out) {
  __shared__ double part[kDotThreads];
  const TileBlock blk = blocks[blockIdx.x];
  double s = 0.0;
  for (std::int64_t i = blk.offset + threadIdx.x; i < blk.offset + blk.n; i += kDotThreads) s += a[i] * b[i];
  part[threadIdx.x] = s;
  const double sum = tree_reduce(part, Sum{});
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

// largest[j] and sums[j]: the maximum and the sum of block j = blockIdx.x's diagonal, a pending update
// included: the scalar one (K) as (p_rr - K_r^2 / a) / lambda, or the joint one of rank q (U) as
// (p_rr - U_0r^2 - ... - U_(q-1)r^2) / lambda, the terms in k order (PackedCovariance::diagonal's
// arithmetic). Strided partial values, then trees in a fixed order.
template <typename T>
__global__ void diagonal_stats_kernel(void* const* P, const TileBlock* blocks, const double* K, double inv_a,
                                      double inv_lambda, const double* U, std::int64_t ld, int q,
                                      double* largest, double* sums) {
  __shared__ double part[kDotThreads];
  const TileBlock b = blocks[blockIdx.x];
  const T* p = static_cast<const T*>(P[blockIdx.x]);
  double m = -HUGE_VAL, s = 0.0;
  for (std::int64_t r = threadIdx.x; r < b.n; r += kDotThreads) {
    double d = static_cast<double>(p[row_start(b.n, r)]);  // p_rr
    if (K) {
      const double k = K[b.offset + r];
      d = __dmul_rn(__dsub_rn(d, __dmul_rn(__dmul_rn(k, k), inv_a)), inv_lambda);
    } else if (q > 0) {
      for (int k = 0; k < q; ++k) {
        const double u = U[k * ld + b.offset + r];
        d = __dsub_rn(d, __dmul_rn(u, u));
      }
      d = __dmul_rn(d, inv_lambda);
    }
    m = m < d ? d : m;
    s += d;
  }
  part[threadIdx.x] = m;
  const double block_max = tree_reduce(part, Max{});
  __syncthreads();  // every thread has read part[0] before it is overwritten
  part[threadIdx.x] = s;
  const double block_sum = tree_reduce(part, Sum{});
  if (threadIdx.x == 0) {
    largest[blockIdx.x] = block_max;
    sums[blockIdx.x] = block_sum;
  }
}

// Row r = blockIdx.x of P <- S P S: p_rc <- s_r s_c p_rc for c >= r, the threads striding over c.
template <typename T>
__global__ void scale_kernel(T* P, std::int64_t n, const double* s) {
  const std::int64_t r = blockIdx.x;
  T* row = P + row_start(n, r) - r;  // row[c] = p_rc for c >= r
  const double sr = s[r];
  for (std::int64_t c = r + threadIdx.x; c < n; c += blockDim.x)
    row[c] = static_cast<T>(static_cast<double>(row[c]) * (sr * s[c]));
}

}  // namespace

template <typename T>
void sweep(const DeviceTiles& t, const RankOneUpdate& update, const double* h, double* y, double* dots,
           CUstream_st* stream) {
  if (t.num_tiles == 0) return;
  const auto grid = static_cast<unsigned>(t.num_tiles);
  const dim3 block(kThreadsX, kThreadsY);
  if (update.K) {
    tiles_kernel<T, true, true>
        <<<grid, block, 0, stream>>>(t.P, t.blocks, t.tiles, update.K, update.inv_a, update.inv_lambda, h,
                                     t.workspace);
  } else {
    tiles_kernel<T, false, true><<<grid, block, 0, stream>>>(t.P, t.blocks, t.tiles, nullptr, 0.0, 1.0, h,
                                                             t.workspace);
  }
  check("packed sweep");
  const int threads = 256;
  gather_kernel<<<static_cast<unsigned>((t.total + threads - 1) / threads), threads, 0, stream>>>(
      t.blocks, t.num_blocks, t.total, t.workspace, y);
  check("packed sweep (partial sums)");
  dots_kernel<<<static_cast<unsigned>(t.num_blocks), kDotThreads, 0, stream>>>(t.blocks, h, y, dots);
  check("packed sweep (h^T K per block)");
}

template <typename T>
void update(const DeviceTiles& t, const RankOneUpdate& update, CUstream_st* stream) {
  if (t.num_tiles == 0 || !update.K) return;
  tiles_kernel<T, true, false><<<static_cast<unsigned>(t.num_tiles), dim3(kThreadsX, kThreadsY), 0, stream>>>(
      t.P, t.blocks, t.tiles, update.K, update.inv_a, update.inv_lambda, nullptr, nullptr);
  check("packed covariance update");
}

template <typename T>
void diagonal_stats(const DeviceTiles& t, const RankOneUpdate& update, const RankUpdate& joint, double* largest,
                    double* sums, CUstream_st* stream) {
  if (t.num_blocks == 0) return;
  const double inv_lambda = update.K ? update.inv_lambda : joint.inv_lambda;
  diagonal_stats_kernel<T><<<static_cast<unsigned>(t.num_blocks), kDotThreads, 0, stream>>>(
      t.P, t.blocks, update.K, update.inv_a, inv_lambda, joint.U, joint.ld, joint.U ? joint.q : 0, largest, sums);
  check("diagonal maxima and sums");
}

template <typename T>
void scale(T* P, std::int64_t n, const double* s, CUstream_st* stream) {
  if (n == 0) return;
  scale_kernel<T><<<static_cast<unsigned>(n), 256, 0, stream>>>(P, n, s);
  check("packed covariance scaling");
}

template void sweep<float>(const DeviceTiles&, const RankOneUpdate&, const double*, double*, double*,
                           CUstream_st*);
template void sweep<double>(const DeviceTiles&, const RankOneUpdate&, const double*, double*, double*,
                            CUstream_st*);
template void update<float>(const DeviceTiles&, const RankOneUpdate&, CUstream_st*);
template void update<double>(const DeviceTiles&, const RankOneUpdate&, CUstream_st*);
template void diagonal_stats<float>(const DeviceTiles&, const RankOneUpdate&, const RankUpdate&, double*, double*,
                                    CUstream_st*);
template void diagonal_stats<double>(const DeviceTiles&, const RankOneUpdate&, const RankUpdate&, double*,
                                     double*, CUstream_st*);
template void scale<float>(float*, std::int64_t, const double*, CUstream_st*);
template void scale<double>(double*, std::int64_t, const double*, CUstream_st*);

}  // namespace deepkf::packed::cuda
