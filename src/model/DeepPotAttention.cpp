// DeepPotImpl::attention_descriptor: se_atten (DPA-1) over the nearest neighbours of any type, as
// docs/deep-potential.md ("se_atten") defines it.
#include <torch/torch.h>

#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

torch::Tensor DeepPotImpl::neighbour_types(const torch::Tensor& atype, const torch::Tensor& nlist) const {
  return config_.mixed_types() ? slot_types(atype, nlist) : torch::Tensor();
}

torch::Tensor DeepPotImpl::attention_descriptor(int c, const torch::Tensor& env_c, const torch::Tensor& sw_c,
                                                const torch::Tensor& types_c, const torch::Tensor& tebd,
                                                torch::Tensor* beyond_end) {
  const auto n = env_c.size(0);
  const auto nnei = env_c.size(1);
  const auto nt = config_.ntypes();
  const auto y = tebd.size(1);
  const auto m = config_.embedding_width();
  const auto real = types_c.ge(0);
  // tebd_t of each slot's neighbour type, the zero vector for an empty slot (row nt): (nt + 1) x Y
  const auto padded = torch::cat({tebd, torch::zeros({1, y}, tebd.options())});
  const auto slot_type = torch::where(real, types_c, torch::full({}, nt, types_c.options())).reshape({-1});
  const auto s = env_c.narrow(2, 0, 1);  // n x N x 1
  const auto centre = tebd[c];
  torch::Tensor g;  // n x N x M
  if (!config_.stripped()) {
    // concat: G([s, tebd_j, tebd_i]) (tebd_i left out with type_one_side)
    std::vector<torch::Tensor> input{s, padded.index_select(0, slot_type).view({n, nnei, y})};
    if (!config_.type_one_side) input.push_back(centre.expand({n, nnei, y}));
    g = embedding_[0]->forward(torch::cat(input, 2));
  } else {
    // strip: G(s) (1 + G_t([tebd_j, tebd_i]) w(r) with smooth gates), G_t once per neighbour type
    const auto pairs = config_.type_one_side ? padded : torch::cat({padded, centre.expand({nt + 1, y})}, 1);
    auto gt = type_filter_->forward(pairs).index_select(0, slot_type).view({n, nnei, m});
    if (config_.attention.smooth) gt = gt * sw_c.unsqueeze(2);
    const auto gs = compressed() ? table_->values(0, s.squeeze(2), beyond_end) : embedding_[0]->forward(s);
    g = gs + gs * gt;
  }
  if (!attention_.is_empty()) {
    // r^_j from the normalised rows' columns 1..3 (their direction is r_ij's; 0 on empty slots)
    const auto dirs = env_c.narrow(2, 1, 3);
    g = attention_->forward(g, real, sw_c, unit_rows(dirs));
  }
  // T = R^^T G / N_c : n x 4 x M ; D = T^T T[:, :M<] : n x (M M<), then tebd_i with concat_output_tebd
  const auto t = torch::matmul(env_c.transpose(1, 2), g) / static_cast<double>(nnei);
  auto d = torch::matmul(t.transpose(1, 2), t.narrow(2, 0, config_.axis_neuron)).reshape({n, -1});
  if (config_.attention.concat_output_tebd) d = torch::cat({d, centre.expand({n, y})}, 1);
  return d;
}

}  // namespace deepkf
