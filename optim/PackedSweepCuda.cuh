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
// every time, and a flush (the update alone) equals the update inside a sweep bit for bit. The joint sweep
// (m vectors, a pending update of rank m: optim/PackedJointSweep.hpp) takes the same tiles with the m
// columns at once, each element updated once and then used for all m products.
//
// The public header of both: the scalar sweep's kernels are in optim/PackedSweepCuda.cu, the joint sweep's
// in optim/PackedJointSweepCuda.cu, and what they share (thread shape, row offsets, the gathering of
// partial sums, the fixed-order reductions) in optim/PackedCudaKernels.cuh.
#include <cstdint>

#include "optim/PackedJointSweep.hpp"
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

// largest[j] = max_r p_rr and sums[j] = sum_r p_rr over block j's diagonal, with the pending update (the
// scalar `update` or the `joint` one of rank q, at most one of them set) counted as PackedCovariance::diagonal
// counts it: (p_rr - K_r^2 / a) / lambda, or (p_rr - U_0r^2 - ... - U_(q-1)r^2) / lambda. largest, sums:
// num_blocks float64 values each on the device. One launch for all blocks.
template <typename T>
void diagonal_stats(const DeviceTiles& tiles, const RankOneUpdate& update, const RankUpdate& joint,
                    double* largest, double* sums, CUstream_st* stream);

// The joint sweep (optim/PackedJointSweep.hpp) for every block j: applies `update` (of rank m, or none,
// q = 0) to P_j in place, then Y_j = P_j H_j for the m vectors and gram[(j m + a) m + b] = H_ja^T Y_jb
// (summed in a fixed order). H, Y: m columns of `total` float64 values on the device (column k at
// + k * total); the update's U as RankUpdate says (column k at U + k * ld, indexed like H); gram:
// num_blocks m^2 values; workspace: m times the TilePlan's workspace length (block j's partial sums of
// column k at m * workspace_j + k * 2 tiles_j n_j). 1 <= m <= kMaxJoint (std::invalid_argument otherwise,
// or for an update of another rank). The tiles as in sweep(), one launch for all m columns; no atomics.
// Asynchronous on `stream`; std::runtime_error naming the CUDA error if a launch fails.
template <typename T>
void joint_sweep(const DeviceTiles& tiles, const RankUpdate& update, const double* H, int m, double* Y,
                 double* gram, double* workspace, CUstream_st* stream);

// The joint update alone (a flush), element for element the same arithmetic as inside joint_sweep(): a
// flushed block equals one updated inside a sweep bit for bit, and since the sweep's products take the
// stored (rounded) values, so does the next sweep's Y, float32 blocks included.
template <typename T>
void joint_update(const DeviceTiles& tiles, const RankUpdate& update, CUstream_st* stream);

// P <- S P S for one block of n, S = diag(s), s: n float64 values on the device (PackedSweep.hpp, scale_rows).
template <typename T>
void scale(T* P, std::int64_t n, const double* s, CUstream_st* stream);

}  // namespace deepkf::packed::cuda
