// PackedCovariance's device side: one launch over all blocks by the tile plan (optim/PackedTiles.hpp), the
// kernels of optim/PackedSweepCuda.cuh on LibTorch's current stream. Compiled only with CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <torch/torch.h>

#include <algorithm>

#include "optim/PackedCovariance.hpp"
#include "optim/PackedSweepCuda.cuh"

namespace deepkf {

std::int64_t PackedCovariance::plan_device_tiles() {
  // The blocks' addresses are fixed: assign() copies into the blocks, nothing reallocates them.
  auto plan = packed::plan_tiles(sizes_);
  static_assert(sizeof(packed::TileBlock) == 3 * sizeof(std::int64_t) &&
                sizeof(packed::Tile) == 3 * sizeof(std::int32_t));
  const auto nb = static_cast<std::int64_t>(plan.blocks.size());
  const auto nt = static_cast<std::int64_t>(plan.tiles.size());
  tile_blocks_ = torch::from_blob(plan.blocks.data(), {3 * nb}, torch::kInt64).to(device_);
  tiles_ = torch::from_blob(plan.tiles.data(), {3 * nt}, torch::kInt32).to(device_);
  std::vector<std::int64_t> addresses;
  for (const auto& P : blocks_) addresses.push_back(reinterpret_cast<std::int64_t>(P.data_ptr()));
  block_ptrs_ = torch::tensor(addresses, torch::kInt64).to(device_);
  device_tiles_.P = reinterpret_cast<void* const*>(block_ptrs_.data_ptr<std::int64_t>());
  device_tiles_.blocks = reinterpret_cast<const packed::TileBlock*>(tile_blocks_.data_ptr<std::int64_t>());
  device_tiles_.tiles = reinterpret_cast<const packed::Tile*>(tiles_.data_ptr<std::int32_t>());
  device_tiles_.num_blocks = nb;
  device_tiles_.num_tiles = nt;
  device_tiles_.total = offsets_.back();
  return plan.workspace;
}

packed::RankOneUpdate PackedCovariance::pending_update() const {
  // Only a scalar update: with a joint one pending, K is undefined (pending_joint() describes that one).
  if (!pending_K_.defined()) return {};
  return {pending_K_.data_ptr<double>(), pending_inv_a_, pending_inv_lambda_};
}

void PackedCovariance::sweep_cuda(const torch::Tensor& h, torch::Tensor& K, std::vector<double>& terms) {
  // h_j^T K_j per block in the same launches (one block's segment summed in a fixed order).
  auto dots = torch::empty({num_blocks()}, h.options());
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::cuda::sweep<T>(device_tiles_, pending_update(), h.data_ptr<double>(), K.data_ptr<double>(),
                           dots.data_ptr<double>(), at::cuda::getCurrentCUDAStream().stream());
  });
  const auto host = dots.to(torch::kCPU);
  std::copy(host.data_ptr<double>(), host.data_ptr<double>() + num_blocks(), terms.begin());
}

void PackedCovariance::flush_cuda() {
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::cuda::update<T>(device_tiles_, pending_update(), at::cuda::getCurrentCUDAStream().stream());
  });
}

void PackedCovariance::sweep_joint_cuda(const torch::Tensor& H, torch::Tensor& Y, torch::Tensor& gram) {
  // The tiles' partial sums once per vector: m times the scalar sweep's workspace.
  const auto m = H.size(0);
  const auto length = m * workspace_.size(0);
  if (!joint_workspace_.defined() || joint_workspace_.size(0) < length)
    joint_workspace_ = torch::empty({length}, workspace_.options());
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::cuda::joint_sweep<T>(device_tiles_, pending_joint(), H.data_ptr<double>(), static_cast<int>(m),
                                 Y.data_ptr<double>(), gram.data_ptr<double>(),
                                 joint_workspace_.data_ptr<double>(),
                                 at::cuda::getCurrentCUDAStream().stream());
  });
}

void PackedCovariance::flush_joint_cuda() {
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::cuda::joint_update<T>(device_tiles_, pending_joint(), at::cuda::getCurrentCUDAStream().stream());
  });
}

torch::Tensor PackedCovariance::diagonal_stats_cuda() const {
  // One launch for all blocks and one wait for the device (in place of ~10 tensor operations per block: for
  // 991 blocks, likely most of the 81 ms a joint filter update took on an H200).
  auto stats = torch::empty({2, num_blocks()}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::cuda::diagonal_stats<T>(device_tiles_, pending_update(), pending_joint(),
                                    stats[0].data_ptr<double>(), stats[1].data_ptr<double>(),
                                    at::cuda::getCurrentCUDAStream().stream());
  });
  return stats.to(torch::kCPU);
}

void PackedCovariance::scale_cuda(std::size_t j, const torch::Tensor& s) {
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::cuda::scale<T>(blocks_[j].data_ptr<T>(), sizes_[j], s.data_ptr<double>(),
                           at::cuda::getCurrentCUDAStream().stream());
  });
}

}  // namespace deepkf
