#pragma once
// What the scalar sweep's kernels (optim/PackedSweepCuda.cu) and the joint sweep's
// (optim/PackedJointSweepCuda.cu) share: the thread shape of a tile, the launch check, the packed row
// offsets, the gathering of a row's partial sums and the fixed-order tree reduction. Internal to those two
// files: everything here is in an anonymous namespace, so each has its own copy and nothing is defined twice
// at link time.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "optim/PackedSweepCuda.cuh"

namespace deepkf::packed::cuda {

namespace {

constexpr int kThreadsX = 32;             // one warp along a tile row: coalesced reads of p_rc
constexpr int kThreadsY = 8;              // warps per thread block
constexpr int kCols = kTile / kThreadsX;  // columns per thread
constexpr int kRows = kTile / kThreadsY;  // rows per thread
constexpr int kDotThreads = 256;

void check(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA kernel ") + what + " failed: " + cudaGetErrorString(err));
}

__device__ __forceinline__ std::int64_t row_start(std::int64_t n, std::int64_t r) {
  return r * n - r * (r - 1) / 2;
}

// Row r of a block of n from its tiles' partial sums: sum_{J >= I(r)} rows[J n + r] + sum_{I' <= I(r)}
// cols[I' n + r], in that order.
__device__ __forceinline__ double gathered(const double* rows, const double* cols, std::int64_t n,
                                           std::int64_t r) {
  const std::int64_t I = r / kTile, tiles = tiles_of(n);
  double s = 0.0;
  for (std::int64_t J = I; J < tiles; ++J) s += rows[J * n + r];
  for (std::int64_t i = 0; i <= I; ++i) s += cols[i * n + r];
  return s;
}

struct Sum {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct Max {
  __device__ double operator()(double a, double b) const { return a < b ? b : a; }
};

// part[0 .. kDotThreads) combined into one value by a tree in a fixed order (every thread gets it).
template <typename F>
__device__ __forceinline__ double tree_reduce(double* part, F combine) {
  __syncthreads();
  for (int w = kDotThreads / 2; w > 0; w >>= 1) {
    const int i = static_cast<int>(threadIdx.x);
    if (i < w) part[i] = combine(part[i], part[i + w]);
    __syncthreads();
  }
  return part[0];
}

}  // namespace

}  // namespace deepkf::packed::cuda
