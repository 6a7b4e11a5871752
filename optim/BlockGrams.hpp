#pragma once
// Per-block m x m products of two [m, sum n_j] float64 matrices, blocks one after another along the columns
// (the joint sweep's H^T Y and the trust radius's Y^T Y, optim/PackedCovariance.hpp):
//   grams[j][a][b] = sum over block j's columns c of X[a][c] Z[b][c]
// Both forms return [num_blocks, m, m] float64 on the CPU and depend on neither the thread count nor the
// other blocks.
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace deepkf {

// CPU tensors: each sum in index order, threads taking blocks.
torch::Tensor block_grams_cpu(const torch::Tensor& X, const torch::Tensor& Z,
                              const std::vector<std::int64_t>& sizes);

// Any device: each run of consecutive blocks of one size as one batched product (a layer's blocks share a
// size, so a model takes a few dozen products, not one per block).
torch::Tensor block_grams_batched(const torch::Tensor& X, const torch::Tensor& Z,
                                  const std::vector<std::int64_t>& sizes);

}  // namespace deepkf
