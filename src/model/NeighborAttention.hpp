#pragma once
// se_atten's gated self-attention over one centre's neighbours (docs/deep-potential.md, "se_atten"): each
// layer mixes the neighbours' embedding rows G_j with weights from their queries and keys, gated by the
// switch function and the angle between the neighbours, and adds the result back through a layer norm.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/model/AttentionConfig.hpp"

namespace deepkf {

// v / max(|v|, 1e-12) over the last dimension; the floor keeps the gradient finite at v = 0.
torch::Tensor unit_rows(const torch::Tensor& v);

class NeighborAttentionImpl : public torch::nn::Module {
 public:
  // config.layers layers over rows of `width` numbers (the embedding width M). Parameters per layer l,
  // registered in this order: w_in<l> [M, 3 A], b_in<l> [3 A] (queries, keys, values side by side), w_out<l>
  // [A, M], b_out<l> [M], then ln_w<l>, ln_b<l> [M] (parameters with trainable_ln, else buffers of 1 and 0).
  // W ~ N(0, 1/sqrt(n_in + n_out)), b ~ N(0, 1) from `generator`, stored in `dtype`.
  NeighborAttentionImpl(const AttentionConfig& config, std::int64_t width, at::Generator generator,
                        c10::ScalarType dtype);

  // g: n x N x M rows of n centres' N neighbour slots; real: n x N (bool), the slots that hold a neighbour;
  // sw: n x N, the switch w(r_ij) (0 on empty slots); rhat: n x N x 3, r_ij / |r_ij| (0 on empty slots).
  // Returns n x N x M.
  torch::Tensor forward(const torch::Tensor& g, const torch::Tensor& real, const torch::Tensor& sw,
                        const torch::Tensor& rhat) const;

  std::int64_t parameter_count() const;
  void set_trainable(bool trainable);

 private:
  struct Layer {
    torch::Tensor w_in, b_in, w_out, b_out, ln_w, ln_b;
  };
  AttentionConfig config_;
  std::vector<Layer> layers_;
};

TORCH_MODULE(NeighborAttention);

}  // namespace deepkf
