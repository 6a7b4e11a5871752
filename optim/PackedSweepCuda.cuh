#pragma once
// The CUDA kernels of the packed covariance: the same sweep as optim/PackedSweep.hpp on device memory, for
// all blocks of a rank in one launch per kernel (the tables: DeviceTiles, optim/PackedTiles.hpp).
// Torch-free and includable from plain C++ (the stream is CUDA's opaque handle). Compiled only when LibTorch
// has CUDA (DEEPKF_WITH_CUDA).
//
// Each block's packed triangle is cut into square tiles (optim/PackedTiles.hpp), one thread block each, all
// tiles of all blocks in one grid. A tile's threads apply the pending update to its elements and form two
// partial products: for its rows, sum_c p_rc h_c over the tile's columns, and, off the diagonal tiles, for
// its columns, sum_r p_rc h_r over the tile's rows. The partials go to the block's part of the workspace, and
// a second kernel sums them for every index in a fixed order: no atomics, so a sweep gives the same bits
// every time, and a flush (the update alone) equals the update inside a sweep bit for bit.
#include <cstdint>

#include "optim/PackedSweep.hpp"
#include "optim/PackedTiles.hpp"

struct CUstream_st;

namespace deepkf::packed::cuda {

// For every block j: applies `update` (its K indexed like h, or none) to P_j in place, then y_j = P_j h_j and
// dots[j] = h_j^T y_j (summed in a fixed order). h, y: `total` float64 values on the device, dots: num_blocks.
// Asynchronous on `stream`. Throws std::runtime_error naming the CUDA error if a launch fails.
template <typename T>
void sweep(const DeviceTiles& tiles, const RankOneUpdate& update, const double* h, double* y, double* dots,
           CUstream_st* stream);

// The update alone, element for element the same arithmetic as inside sweep().
template <typename T>
void update(const DeviceTiles& tiles, const RankOneUpdate& update, CUstream_st* stream);

// out[j] = max_r p_rr over block j's diagonal, with the update (when set) counted as (p_rr - K_r^2 / a) /
// lambda, the arithmetic of PackedCovariance::diagonal. out: num_blocks float64 values on the device.
template <typename T>
void largest_diagonals(const DeviceTiles& tiles, const RankOneUpdate& update, double* out, CUstream_st* stream);

// P <- S P S for one block of n, S = diag(s), s: n float64 values on the device (PackedSweep.hpp, scale_rows).
template <typename T>
void scale(T* P, std::int64_t n, const double* s, CUstream_st* stream);

}  // namespace deepkf::packed::cuda
