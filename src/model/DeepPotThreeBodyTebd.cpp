// DeepPotImpl::three_body_tebd_descriptor: se_e3_tebd, the three-body descriptor over the nearest neighbours
// of any type with their embedded types, as docs/deep-potential.md ("se_e3_tebd") defines it.
#include <torch/torch.h>

#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

torch::Tensor DeepPotImpl::three_body_tebd_descriptor(int c, const torch::Tensor& env_c,
                                                      const torch::Tensor& sw_c, const torch::Tensor& types_c,
                                                      const torch::Tensor& tebd, torch::Tensor* beyond_end) {
  const auto n = env_c.size(0);
  const auto nnei = static_cast<double>(env_c.size(1));
  const auto nt = config_.ntypes();
  const auto y = tebd.size(1);
  const auto m = config_.embedding_width();
  // An empty slot has r^ = 0 (its row is 0 and the columns 1..3 are not shifted), so g_jk = 0 with every
  // partner: the slots after the last one any of these centres fills are cut, which changes nothing.
  const auto real = types_c.ge(0);
  const auto len = filled_slots(real);
  auto d = torch::zeros({n, m}, env_c.options());
  if (len > 0) {
    const auto dirs = env_c.narrow(1, 0, len).narrow(2, 1, 3);  // r^_j : n x L x 3
    const auto g = torch::matmul(dirs, dirs.transpose(1, 2));   // g_jk = r^_j . r^_k : n x L x L
    // tebd_t of each slot's neighbour type, the zero vector for an empty slot (row nt): (nt + 1) x Y
    const auto padded = torch::cat({tebd, torch::zeros({1, y}, tebd.options())});
    const auto slot_type =
        torch::where(real, types_c, torch::full({}, nt, types_c.options())).narrow(1, 0, len);
    torch::Tensor emb;  // G_jk : n x L x L x M
    if (!config_.stripped()) {
      // concat: G([g_jk, tebd_j, tebd_k])
      const auto slot_vectors = padded.index_select(0, slot_type.reshape({-1})).view({n, len, y});
      const auto tj = slot_vectors.unsqueeze(2).expand({n, len, len, y});
      const auto tk = slot_vectors.unsqueeze(1).expand({n, len, len, y});
      emb = embedding_[0]->forward(torch::cat({g.unsqueeze(3), tj, tk}, 3));
    } else {
      // strip: G(g_jk) (1 + G_t([tebd_j, tebd_k]) w_j w_k), the smooth gates w with `smooth`; G_t once per
      // pair of types, row a (nt + 1) + b holding [tebd_a, tebd_b]
      const auto pairs = torch::cat({padded.repeat_interleave(nt + 1, 0), padded.repeat({nt + 1, 1})}, 1);
      const auto pair_index = slot_type.unsqueeze(2) * (nt + 1) + slot_type.unsqueeze(1);  // n x L x L
      auto gt = type_filter_->forward(pairs).index_select(0, pair_index.reshape({-1})).view({n, len, len, m});
      if (config_.attention.smooth) {
        const auto w = sw_c.narrow(1, 0, len);
        gt = gt * (w.unsqueeze(2) * w.unsqueeze(1)).unsqueeze(3);
      }
      const auto gs =
          compressed() ? table_->values(0, g, beyond_end) : embedding_[0]->forward(g.unsqueeze(3));
      emb = gs + gs * gt;
    }
    // D = (1 / N_c^2) sum_jk g_jk G_jk : n x M
    d = torch::matmul(g.reshape({n, 1, len * len}), emb.reshape({n, len * len, m})).squeeze(1) /
        (nnei * nnei);
  }
  if (config_.attention.concat_output_tebd) d = torch::cat({d, tebd[c].expand({n, y})}, 1);
  return d;
}

}  // namespace deepkf
