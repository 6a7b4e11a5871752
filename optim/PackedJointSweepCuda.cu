// The joint sweep's kernels (optim/PackedSweepCuda.cuh, optim/PackedJointSweep.hpp): the update of rank m and
// Y = P H over the tiles for m columns at once, the Gram matrices H^T Y per block. The scalar sweep's are in
// optim/PackedSweepCuda.cu; what both use in optim/PackedCudaKernels.cuh.
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "optim/PackedCudaKernels.cuh"
#include "optim/PackedSweepCuda.cuh"

namespace deepkf::packed::cuda {

namespace {

// The joint sweep (optim/PackedJointSweep.hpp): the tiles of the scalar sweep (tile() in
// optim/PackedSweepCuda.cu) with M columns of H, Y and U at once.

// How the joint tile kernel holds its M columns. Each thread keeps, for kCols of the tile's columns, their H
// and U values and column sums (3 kCols M doubles) in registers, so kCols shrinks as M grows (48 doubles at
// most) and the tile's columns are taken in kSlabs slabs of kSlab = kThreadsX kCols. A row's M sums are
// reduced over the warp at once (warp_sum_columns, over kPadded: M rounded up to a power of two); the column
// sums over the warps through shared memory, kGroup columns of Y at a time (kGroup kCols <= 8: 16 KiB).
template <int M>
struct JointShape {
  static constexpr int kCols = M <= 4 ? 4 : (M <= 8 ? 2 : 1);
  static constexpr int kSlab = kThreadsX * kCols;
  static constexpr int kSlabs = static_cast<int>(kTile) / kSlab;
  static constexpr int kPadded = M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : M <= 8 ? 8 : 16;
  static constexpr int kGroup = M < 8 / kCols ? M : 8 / kCols;
  static_assert(M >= 1 && M <= kPadded && kPadded <= kThreadsX && kSlabs * kSlab == kTile);
};

// One level of warp_sum_columns: v[0 .. 2 half) to v[0 .. half) over lane pairs (l, l ^ o).
template <int N, int kHalf>
__device__ __forceinline__ void warp_halve(double (&v)[N], int lane, int o) {
  const bool upper = (lane & o) != 0;
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    const double send = upper ? v[i] : v[i + kHalf];
    const double keep = upper ? v[i + kHalf] : v[i];
    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
  }
  if constexpr (kHalf > 1) warp_halve<N, kHalf / 2>(v, lane, o / 2);
}

// v[0 .. N) summed over the warp for every index at once (N a power of two, N <= 32). At each level a lane
// keeps the half of its values that its lane bit o selects and adds its partner's (lane ^ o) values of that
// half, so N - 1 shuffles take N values to one in log2 N levels; the remaining levels add single values.
// Afterwards v[0] of lane l is the sum over the 32 lanes of index l / (32 / N) (N shuffles or so where one
// reduction per index would take 5 N). The order is fixed: the same bits every run.
template <int N>
__device__ __forceinline__ void warp_sum_columns(double (&v)[N]) {
  static_assert(kThreadsX == 32 && (N & (N - 1)) == 0 && N <= kThreadsX);
  if constexpr (N > 1) warp_halve<N, N / 2>(v, static_cast<int>(threadIdx.x), kThreadsX / 2);
#pragma unroll
  for (int o = kThreadsX / (2 * N); o > 0; o >>= 1) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
}

// The row's elements (r, c_q) held in v[q] (those with in[q], the others ignored): p <- (p - sum_k U_rk U_ck)
// / lambda, the terms subtracted in order k = 0 .. M-1 and then multiplied by 1 / lambda, without
// contraction (as updated() in PackedSweepCuda.cu), rounded to T and stored; v[q] becomes the stored value,
// which the products use, so a flushed block equals one updated inside a sweep bit for bit, float32
// included. ur[k ld] = U_rk.
template <typename T, int M, int C>
__device__ __forceinline__ void joint_update_row(T* row, const std::int64_t (&c)[C], const bool (&in)[C],
                                                 const double* __restrict__ ur, std::int64_t ld,
                                                 const double (&uc)[C][M], double inv_lambda,
                                                 double (&v)[C]) {
#pragma unroll
  for (int k = 0; k < M; ++k) {
    const double u = ur[k * ld];
#pragma unroll
    for (int q = 0; q < C; ++q) v[q] = __dsub_rn(v[q], __dmul_rn(u, uc[q][k]));
  }
#pragma unroll
  for (int q = 0; q < C; ++q) {
    const T p = static_cast<T>(__dmul_rn(v[q], inv_lambda));
    if (in[q]) row[c[q]] = p;
    v[q] = static_cast<double>(p);
  }
}

// The column partials of slab columns cs .. cs + kSlab - 1 of tile row I: for each column k of Y, the sum
// over the warps (ty = 0 .. kThreadsY - 1, in that order) of their col_acc, kGroup columns of Y at a time
// through shared memory, stored at cols[k stride + I n + c].
template <int M>
__device__ __forceinline__ void store_columns(const double (&col_acc)[JointShape<M>::kCols][M],
                                              std::int64_t n, std::int64_t I, std::int64_t cs, double* cols,
                                              std::int64_t stride) {
  using S = JointShape<M>;
  __shared__ double col_sums[S::kGroup][kThreadsY][S::kSlab];
  const int tx = threadIdx.x, ty = threadIdx.y, t = ty * kThreadsX + tx;
#pragma unroll
  for (int g = 0; g < M; g += S::kGroup) {
#pragma unroll
    for (int e = 0; e < S::kGroup; ++e) {
      if (g + e < M) {
#pragma unroll
        for (int q = 0; q < S::kCols; ++q) col_sums[e][ty][tx + q * kThreadsX] = col_acc[q][g + e];
      }
    }
    __syncthreads();
    for (int x = t; x < S::kGroup * S::kSlab; x += kThreadsX * kThreadsY) {
      const int e = x / S::kSlab, i = x % S::kSlab;
      const std::int64_t c = cs + i;
      if (g + e < M && c < n) {
        double sum = 0.0;
        for (int w = 0; w < kThreadsY; ++w) sum += col_sums[e][w][i];
        cols[(g + e) * stride + I * n + c] = sum;
      }
    }
    __syncthreads();
  }
}

// Tile (I, J), J >= I, of a block of n, for M columns (U, H, part of that block; part: the block's partial
// sums, column k's from part + k stride, stride = 2 tiles n, laid out as the scalar sweep's). With kUpdate,
// applies the update to the tile's elements (joint_update_row). With kProduct, writes for each column k of Y
// the row partials rows_k[J n + r] = sum_{c in tile J, c >= r} p_rc H_ck and the column partials
// cols_k[I n + c] = sum_{r in tile I, r < c} p_rc H_rk. Each slab's elements are updated once and then enter
// all M products; a row's sums accumulate over the slabs in shared memory, in slab order.
template <typename T, int M, bool kUpdate, bool kProduct>
__device__ __forceinline__ void joint_tile(T* P, std::int64_t n, std::int64_t I, std::int64_t J,
                                           const double* __restrict__ U, std::int64_t ldu, double inv_lambda,
                                           const double* __restrict__ H, std::int64_t ldh, double* part) {
  using S = JointShape<M>;
  constexpr int C = S::kCols;
  constexpr int kRowLanes = kThreadsX / S::kPadded;  // lanes holding each column's row sum
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = I * kTile, c0 = J * kTile, stride = 2 * tiles_of(n) * n;
  __shared__ double row_sums[kProduct ? M : 1][kTile];  // [k][lr], each value written by one lane only

  for (int s = 0; s < S::kSlabs; ++s) {
    const std::int64_t cs = c0 + s * S::kSlab;
    if (cs >= n) break;  // the same for all threads
    std::int64_t c[C];
    double hc[C][M], uc[C][M], col_acc[C][M];
#pragma unroll
    for (int q = 0; q < C; ++q) {
      c[q] = cs + tx + q * kThreadsX;
#pragma unroll
      for (int k = 0; k < M; ++k) {
        hc[q][k] = (kProduct && c[q] < n) ? H[k * ldh + c[q]] : 0.0;
        uc[q][k] = (kUpdate && c[q] < n) ? U[k * ldu + c[q]] : 0.0;
        col_acc[q][k] = 0.0;
      }
    }
    for (int i = 0; i < kRows; ++i) {
      const int lr = ty + i * kThreadsY;
      const std::int64_t r = r0 + lr;
      if (r >= n) break;                 // the same for the whole warp
      T* row = P + row_start(n, r) - r;  // row[c] = p_rc for c >= r
      double v[C];
      bool in[C];
#pragma unroll
      for (int q = 0; q < C; ++q) {
        in[q] = c[q] >= r && c[q] < n;
        v[q] = in[q] ? static_cast<double>(row[c[q]]) : 0.0;
      }
      if constexpr (kUpdate) joint_update_row<T, M, C>(row, c, in, U + r, ldu, uc, inv_lambda, v);
      if constexpr (kProduct) {
        // Y_rk += p_rc H_ck (acc, this lane's share) ; Y_ck += p_rc H_rk (c > r)
        double acc[S::kPadded];
#pragma unroll
        for (int k = 0; k < S::kPadded; ++k) acc[k] = 0.0;
#pragma unroll
        for (int k = 0; k < M; ++k) {
          const double hr = H[k * ldh + r];
#pragma unroll
          for (int q = 0; q < C; ++q) {
            if (!in[q]) continue;
            acc[k] += v[q] * hc[q][k];
            if (c[q] > r) col_acc[q][k] += v[q] * hr;
          }
        }
        warp_sum_columns<S::kPadded>(acc);
        const int k = tx / kRowLanes;
        if (k < M && tx % kRowLanes == 0) row_sums[k][lr] = s == 0 ? acc[0] : row_sums[k][lr] + acc[0];
      }
    }
    if constexpr (kProduct) store_columns<M>(col_acc, n, I, cs, part + tiles_of(n) * n, stride);
  }
  if constexpr (kProduct) {
    __syncthreads();
    const int t = ty * kThreadsX + tx;
    for (int x = t; x < M * static_cast<int>(kTile); x += kThreadsX * kThreadsY) {
      const int k = x / static_cast<int>(kTile), i = x % static_cast<int>(kTile);
      if (r0 + i < n) part[k * stride + J * n + r0 + i] = row_sums[k][i];
    }
  }
}

// One thread block per tile of the plan, as tiles_kernel (PackedSweepCuda.cu); block j's partial sums at
// workspace + M workspace_j. One resident block per multiprocessor is enough for the bounds: ptxas may then
// use up to 255 registers a thread, and keeps every M's columns in registers without spilling (about 200
// at M = 16).
template <typename T, int M, bool kUpdate, bool kProduct>
__global__ void __launch_bounds__(kThreadsX* kThreadsY, 1)
    joint_tiles_kernel(void* const* P, const TileBlock* blocks, const Tile* tiles, const double* U,
                       std::int64_t ldu, double inv_lambda, const double* H, std::int64_t ldh,
                       double* workspace) {
  const Tile t = tiles[blockIdx.x];
  const TileBlock b = blocks[t.block];
  joint_tile<T, M, kUpdate, kProduct>(
      static_cast<T*>(P[t.block]), b.n, t.I, t.J, kUpdate ? U + b.offset : nullptr, ldu, inv_lambda,
      kProduct ? H + b.offset : nullptr, ldh, kProduct ? workspace + M * b.workspace : nullptr);
}

// Y_gk = gathered(rows_jk, cols_jk, n_j, g - offset_j) for column k = blockIdx.y of Y and every flat index g,
// block j's partial sums of column k at workspace + m workspace_j + k 2 tiles_j n_j.
__global__ void joint_gather_kernel(const TileBlock* blocks, std::int64_t num_blocks, std::int64_t total,
                                    int m, const double* workspace, double* Y) {
  const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= total) return;
  const std::int64_t k = blockIdx.y;
  const TileBlock b = blocks[block_of(blocks, num_blocks, g)];
  const std::int64_t tiles = tiles_of(b.n);
  const double* rows = workspace + m * b.workspace + k * 2 * tiles * b.n;
  Y[k * total + g] = gathered(rows, rows + tiles * b.n, b.n, g - b.offset);
}

// gram[(j M + a) M + b] = H_ja^T Y_jb for j = blockIdx.x / M, a = blockIdx.x % M and every b (a block's M
// thread blocks follow each other, so its columns of H and Y come from memory about once): strided partial
// sums, then a tree per b, in a fixed order.
template <int M>
__global__ void gram_kernel(const TileBlock* blocks, std::int64_t total, const double* H, const double* Y,
                            double* gram) {
  __shared__ double part[M][kDotThreads];
  const std::int64_t j = blockIdx.x / M, a = blockIdx.x % M;
  const TileBlock blk = blocks[j];
  double s[M];
#pragma unroll
  for (int b = 0; b < M; ++b) s[b] = 0.0;
  for (std::int64_t i = blk.offset + threadIdx.x; i < blk.offset + blk.n; i += kDotThreads) {
    const double h = H[a * total + i];
#pragma unroll
    for (int b = 0; b < M; ++b) s[b] += h * Y[b * total + i];
  }
#pragma unroll
  for (int b = 0; b < M; ++b) part[b][threadIdx.x] = s[b];
  for (int b = 0; b < M; ++b) {
    const double sum = tree_reduce(part[b], Sum{});
    if (threadIdx.x == 0) gram[(j * M + a) * M + b] = sum;
  }
}

// The joint sweep's launches for M columns: the tiles (applying the update of rank M when there is one), the
// partial sums gathered into Y, then the Gram matrices per block.
template <typename T, int M>
void joint_sweep_m(const DeviceTiles& t, const RankUpdate& u, const double* H, double* Y, double* gram,
                   double* workspace, CUstream_st* stream) {
  const auto grid = static_cast<unsigned>(t.num_tiles);
  const dim3 block(kThreadsX, kThreadsY);
  if (u.q > 0) {
    joint_tiles_kernel<T, M, true, true>
        <<<grid, block, 0, stream>>>(t.P, t.blocks, t.tiles, u.U, u.ld, u.inv_lambda, H, t.total, workspace);
  } else {
    joint_tiles_kernel<T, M, false, true>
        <<<grid, block, 0, stream>>>(t.P, t.blocks, t.tiles, nullptr, 0, 1.0, H, t.total, workspace);
  }
  check("joint sweep");
  const int threads = 256;
  const dim3 columns(static_cast<unsigned>((t.total + threads - 1) / threads), M);
  joint_gather_kernel<<<columns, threads, 0, stream>>>(t.blocks, t.num_blocks, t.total, M, workspace, Y);
  check("joint sweep (partial sums)");
  gram_kernel<M>
      <<<static_cast<unsigned>(t.num_blocks * M), kDotThreads, 0, stream>>>(t.blocks, t.total, H, Y, gram);
  check("joint sweep (H^T Y per block)");
}

// The update of rank M alone: the tile kernel without products (the same update instructions).
template <typename T, int M>
void joint_update_m(const DeviceTiles& t, const RankUpdate& u, CUstream_st* stream) {
  joint_tiles_kernel<T, M, true, false>
      <<<static_cast<unsigned>(t.num_tiles), dim3(kThreadsX, kThreadsY), 0, stream>>>(
          t.P, t.blocks, t.tiles, u.U, u.ld, u.inv_lambda, nullptr, 0, nullptr);
  check("joint covariance update");
}

using JointSweepLaunch = void (*)(const DeviceTiles&, const RankUpdate&, const double*, double*, double*,
                                  double*, CUstream_st*);
using JointUpdateLaunch = void (*)(const DeviceTiles&, const RankUpdate&, CUstream_st*);

// The launches for M = 1 .. kMaxJoint, indexed by M - 1.
template <typename T, int... Ms>
constexpr std::array<JointSweepLaunch, sizeof...(Ms)> joint_sweeps(std::integer_sequence<int, Ms...>) {
  return {&joint_sweep_m<T, Ms + 1>...};
}
template <typename T, int... Ms>
constexpr std::array<JointUpdateLaunch, sizeof...(Ms)> joint_updates(std::integer_sequence<int, Ms...>) {
  return {&joint_update_m<T, Ms + 1>...};
}

}  // namespace

template <typename T>
void joint_sweep(const DeviceTiles& t, const RankUpdate& update, const double* H, int m, double* Y,
                 double* gram, double* workspace, CUstream_st* stream) {
  if (m < 1 || m > kMaxJoint)
    throw std::invalid_argument("joint sweep: " + std::to_string(m) + " vectors (1 to " +
                                std::to_string(kMaxJoint) + " supported)");
  if (update.q != 0 && update.q != m)
    throw std::invalid_argument("joint sweep: a pending update of rank " + std::to_string(update.q) +
                                " with " + std::to_string(m) + " vectors");
  if (t.num_tiles == 0) return;
  static constexpr auto launch = joint_sweeps<T>(std::make_integer_sequence<int, kMaxJoint>{});
  launch[static_cast<std::size_t>(m - 1)](t, update, H, Y, gram, workspace, stream);
}

template <typename T>
void joint_update(const DeviceTiles& t, const RankUpdate& update, CUstream_st* stream) {
  if (t.num_tiles == 0 || update.q == 0) return;
  if (update.q < 0 || update.q > kMaxJoint)
    throw std::invalid_argument("joint covariance update of rank " + std::to_string(update.q) + " (1 to " +
                                std::to_string(kMaxJoint) + " supported)");
  static constexpr auto launch = joint_updates<T>(std::make_integer_sequence<int, kMaxJoint>{});
  launch[static_cast<std::size_t>(update.q - 1)](t, update, stream);
}

template void joint_sweep<float>(const DeviceTiles&, const RankUpdate&, const double*, int, double*, double*,
                                 double*, CUstream_st*);
template void joint_sweep<double>(const DeviceTiles&, const RankUpdate&, const double*, int, double*, double*,
                                  double*, CUstream_st*);
template void joint_update<float>(const DeviceTiles&, const RankUpdate&, CUstream_st*);
template void joint_update<double>(const DeviceTiles&, const RankUpdate&, CUstream_st*);

}  // namespace deepkf::packed::cuda
