#pragma once
// The covariance's quadratic forms q_k = h_k^T P h_k for m vectors at once, by LibTorch operations on the
// tensor's own device: the path of devices without a packed kernel of their own (the GPU), where the
// alternative is one sweep over P per vector.
//
// With U the upper triangle of the symmetric P (diagonal included), h^T P h = 2 h^T U h - sum_r p_rr h_r^2,
// and h^T U h sums over rows. The packed rows of a range [r0, r1) are contiguous, so the block is taken in
// row panels: each panel is scattered into a dense [r1 - r0, n] float64 matrix (zeros left of the
// diagonal), multiplied by H in one matrix product, and its rows' terms added to q. A panel holds at most
// `panel_values` dense values (a row at least); with its index tensors the extra memory is a few times that
// many 8-byte values, whatever n is.
#include <torch/types.h>

#include <cstdint>

namespace deepkf::packed {

// q [m] float64 on P's device: q_k = h_k^T P h_k. P: the packed triangle of an n x n block (float32 or
// float64); H: [n, m] float64 on the same device, row c holding parameter c's value in each vector.
torch::Tensor quadratic_forms_by_panels(const torch::Tensor& P, std::int64_t n, const torch::Tensor& H,
                                        std::int64_t panel_values = std::int64_t{1} << 22);

}  // namespace deepkf::packed
