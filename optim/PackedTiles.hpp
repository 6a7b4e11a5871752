#pragma once
// How the GPU sweep cuts all covariance blocks into tiles for one kernel launch (optim/PackedSweepCuda.cuh).
// Host code builds the plan once per block layout; the kernels read it from device memory. Plain C++, so the
// plan is tested on machines without a GPU.
//
// Block j (n_j rows, at `offset` in h and K) is cut into square tiles of kTile x kTile: rows I kTile..,
// columns J kTile.., J >= I (its packed upper triangle). Each tile writes partial sums into the block's part
// of the workspace: rows[J n_j + r] for its rows r, cols[I n_j + c] for its columns c, with
// rows = workspace + block.workspace and cols = rows + tiles_j n_j, tiles_j = ceil(n_j / kTile).
#include <cstdint>
#include <vector>

#ifdef __CUDACC__
#define DEEPKF_HOST_DEVICE __host__ __device__
#else
#define DEEPKF_HOST_DEVICE
#endif

namespace deepkf::packed {

constexpr std::int64_t kTile = 128;

struct TileBlock {
  std::int64_t n = 0;          // rows (and columns) of the block
  std::int64_t offset = 0;     // its first index in h, K and the pending update's K
  std::int64_t workspace = 0;  // its first float64 value in the workspace: 2 tiles_j n_j values from there
};

struct Tile {
  std::int32_t block = 0, I = 0, J = 0;  // J >= I
};

struct TilePlan {
  std::vector<TileBlock> blocks;
  std::vector<Tile> tiles;     // block after block, I then J ascending
  std::int64_t workspace = 0;  // float64 values for all blocks' partial sums
};

DEEPKF_HOST_DEVICE inline std::int64_t tiles_of(std::int64_t n) { return (n + kTile - 1) / kTile; }

// A TilePlan's tables and the blocks' storage, in device memory.
struct DeviceTiles {
  void* const* P = nullptr;          // block j's packed values (float or double, as the call's T)
  const TileBlock* blocks = nullptr;  // num_blocks entries
  const Tile* tiles = nullptr;        // num_tiles entries
  std::int64_t num_blocks = 0, num_tiles = 0;
  std::int64_t total = 0;            // sum of n_j: the length of h, y and the update's K
  double* workspace = nullptr;       // TilePlan::workspace values
};

// The plan for blocks of `sizes`, laid out one after another in h and K.
TilePlan plan_tiles(const std::vector<std::int64_t>& sizes);

// The block holding flat index g, 0 <= g < the blocks' total: the j with offset_j <= g < offset_j + n_j
// (blocks in offset order, none empty).
DEEPKF_HOST_DEVICE inline std::int64_t block_of(const TileBlock* blocks, std::int64_t count, std::int64_t g) {
  std::int64_t lo = 0, hi = count - 1;
  while (lo < hi) {  // invariant: the block lies in [lo, hi]
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (blocks[mid].offset <= g) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace deepkf::packed
