#pragma once
// How RLEKF partitions the trainable parameters into blocks ("reorganized layers").
//
// The parameters, in registration order, are flattened into one vector w of N values: a 2-D weight W
// (rows x cols) is flattened transposed (W^T, row-major, so W[r][c] lands at offset + c * rows + r), a 0-D
// or 1-D tensor as it is. Blocks are formed greedily with threshold b (kf_blocksize): walking the tensors
// with a running sum s, a tensor of n values closes the current group when s + n > b (if s > 0) and starts
// a new group; otherwise it joins the group. A group of size >= b is cut into ceil(size / b) blocks of b
// (the last takes the remainder); a smaller group is one block. Blocks are [begin, end) ranges of w.
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace deepkf {

// One block: the range [begin, end) of the flat parameter vector.
struct Block {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
};

// Where one parameter tensor sits in the flat vector.
struct TensorSlot {
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0;
  std::int64_t numel = 0;
  bool transposed = false;  // 2-D: stored as W^T
};

class BlockLayout {
 public:
  BlockLayout() = default;
  // From the parameter shapes in registration order; throws OptimError for blocksize < 1, no parameters
  // or tensors of more than 2 dimensions.
  BlockLayout(const std::vector<std::vector<std::int64_t>>& shapes, std::int64_t blocksize);
  // From the parameter tensors themselves (their shapes).
  static BlockLayout from_tensors(const std::vector<torch::Tensor>& params, std::int64_t blocksize);

  std::int64_t blocksize() const { return blocksize_; }
  std::int64_t num_parameters() const { return num_parameters_; }
  std::int64_t num_blocks() const { return static_cast<std::int64_t>(blocks_.size()); }
  const std::vector<Block>& blocks() const { return blocks_; }
  const std::vector<TensorSlot>& tensors() const { return tensors_; }
  // sum_i n_i (n_i + 1) / 2: the covariance values over all blocks, each stored as its packed upper triangle.
  std::int64_t covariance_elements() const;

  // Flat vector h [N] of dtype `dtype` on the tensors' device from per-parameter tensors shaped like the
  // parameters (e.g. gradients dy/dw). An undefined tensor (a parameter the measurement does not depend on)
  // contributes zeros. Throws OptimError on a count or shape mismatch.
  torch::Tensor gather(const std::vector<torch::Tensor>& tensors, torch::ScalarType dtype) const;
  // Writes the flat vector into `out` (one [N] tensor, any dtype) in place.
  void gather_into(const std::vector<torch::Tensor>& tensors, torch::Tensor& out) const;
  // The inverse: copies flat [N] into the tensors in place (under NoGradGuard).
  void scatter(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) const;

 private:
  void check_tensors(const std::vector<torch::Tensor>& tensors, bool allow_undefined) const;
  // The view of flat's part for tensor t, shaped as stored (W^T for 2-D) so that it matches tensor_view().
  torch::Tensor flat_view(const torch::Tensor& flat, std::size_t t) const;
  // The tensor seen in flat order: W^T for 2-D (a view), the tensor itself otherwise.
  torch::Tensor tensor_view(const torch::Tensor& x, std::size_t t) const;

  std::int64_t blocksize_ = 0;
  std::int64_t num_parameters_ = 0;
  std::vector<Block> blocks_;
  std::vector<TensorSlot> tensors_;
};

// The rank owning each block over `nranks` ranks: contiguous block ranges balanced by memory,
// n_i (n_i + 1) / 2. Block i goes to the rank whose share of the total cost holds the midpoint of block i's
// cost (non-decreasing in i).
std::vector<int> block_owners(const BlockLayout& layout, int nranks);

}  // namespace deepkf
