#pragma once
// The CUDA kernels of the packed covariance: the same sweep as optim/PackedSweep.hpp on device memory.
// Torch-free and includable from plain C++ (the stream is CUDA's opaque handle). Compiled only when
// LibTorch has CUDA (DEEPKF_WITH_CUDA).
//
// The packed triangle is cut into square tiles of kTile x kTile (rows I kTile.., columns J kTile.., J >= I),
// one thread block each. A tile's threads apply the pending update to its elements and form two partial
// products: for its rows, sum_c p_rc h_c over the tile's columns, and, off the diagonal tiles, for its
// columns, sum_r p_rc h_r over the tile's rows. The partials go to a workspace (one row per tile row and tile
// column), and a second kernel sums them for every index in a fixed order: no atomics, so a sweep gives
// the same bits every time, and a flush (the update alone) equals the update inside a sweep bit for bit.
#include <cstdint>
#include <vector>

#include "optim/PackedSweep.hpp"

struct CUstream_st;

namespace deepkf::packed::cuda {

constexpr std::int64_t kTile = 128;

// float64 values of workspace one sweep of an n x n block needs: 2 ceil(n / kTile) n.
std::int64_t sweep_workspace(std::int64_t n);

// y = P h over packed block P (n x n) on the device, after applying `update` (its K on the device too) to
// P in place. h, y: n float64 values on the device; workspace: sweep_workspace(n) values. Asynchronous on
// `stream`. Throws std::runtime_error naming the CUDA error if a launch fails.
template <typename T>
void sweep(T* P, std::int64_t n, const RankOneUpdate& update, const double* h, double* y, double* workspace,
           CUstream_st* stream);

// The update alone, element for element the same arithmetic as inside sweep().
template <typename T>
void update(T* P, std::int64_t n, const RankOneUpdate& update, CUstream_st* stream);

// P <- S P S with S = diag(s), s: n float64 values on the device (PackedSweep.hpp, scale_rows).
template <typename T>
void scale(T* P, std::int64_t n, const double* s, CUstream_st* stream);

// out[j] = sum_{i in [offsets[j], offsets[j+1])} a_i b_i for each segment j, each summed in a fixed order.
// a, b, out on the device; offsets on the host (offsets.size() - 1 segments).
void segment_dots(const double* a, const double* b, const std::vector<std::int64_t>& offsets, double* out,
                  CUstream_st* stream);

}  // namespace deepkf::packed::cuda
