// DeepPotImpl::embed and DeepPotImpl::descriptor: the descriptor forms se_e2_a, se_e2_r and se_e3 of one
// descriptor of the model (docs/deep-potential.md), from its normalised environment rows, and the embedded
// element types of a type embedding.
#include <torch/torch.h>

#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

torch::Tensor DeepPotImpl::embed(std::size_t part, int first, int second, const torch::Tensor& x,
                                 const torch::Tensor& tebd, torch::Tensor* beyond_end) {
  const auto net = static_cast<std::size_t>(first_net_[part] + parts_[part].embedding_index(first, second));
  if (!config_.type_embedded() || config_.stripped()) {
    const auto g =
        compressed() ? table_->values(net, x, beyond_end) : embedding_[net]->forward(x.unsqueeze(-1));
    return config_.stripped() ? g * strip_factor(tebd, first, second) : g;  // G(s) (1 + G_t(types))
  }
  const auto types = pair_types(tebd, first, second);
  auto sizes = x.sizes().vec();
  sizes.push_back(types.size(0));
  return embedding_[net]->forward(torch::cat({x.unsqueeze(-1), types.expand(sizes)}, -1));  // G([s, types])
}

torch::Tensor DeepPotImpl::type_vectors() {
  if (!config_.type_embedded()) return {};
  return type_net_->forward(torch::eye(
      config_.ntypes(), torch::TensorOptions().dtype(config_.precision).device(energy_bias_.device())));
}

torch::Tensor DeepPotImpl::pair_types(const torch::Tensor& tebd, int centre, int neighbour) const {
  return config_.type_one_side ? tebd[neighbour] : torch::cat({tebd[neighbour], tebd[centre]});
}

torch::Tensor DeepPotImpl::strip_factor(const torch::Tensor& tebd, int centre, int neighbour) {
  return 1.0 + type_filter_->forward(pair_types(tebd, centre, neighbour));
}

torch::Tensor DeepPotImpl::fitting_input(const torch::Tensor& d, const torch::Tensor& tebd, int c) const {
  if (!tebd.defined() || config_.mixed_types()) return d;  // se_atten's, se_e3_tebd's D_i end with tebd_i
  return torch::cat({d, tebd[c].expand({d.size(0), tebd.size(1)})}, 1);
}

torch::Tensor DeepPotImpl::embed_filled(std::size_t part, int first, int second, const torch::Tensor& s,
                                        const torch::Tensor& filled, const torch::Tensor& empty_s,
                                        const torch::Tensor& tebd, torch::Tensor* beyond_end) {
  // A slot left empty, or holding a neighbour at or beyond rcut, has the raw row 0 and so the normalised
  // input empty_s[j] whatever the centre, with no dependence on the positions: G(empty_s[j]) once per slot
  // is exact, values and gradients. (Tables count beyond_end per slot: they keep the full evaluation.)
  if (compressed()) return embed(part, first, second, s, tebd, beyond_end);
  const auto where = torch::nonzero(filled.reshape({-1})).squeeze(1);
  if (where.size(0) == filled.numel()) return embed(part, first, second, s, tebd, beyond_end);
  const auto n = s.size(0), sel = s.size(1);
  const auto g_filled = embed(part, first, second, s.reshape({-1}).index_select(0, where), tebd, beyond_end);
  const auto g_empty = embed(part, first, second, empty_s, tebd, beyond_end);  // sel x M
  const auto m = g_empty.size(1);
  return g_empty.expand({n, sel, m}).reshape({n * sel, m}).index_copy(0, where, g_filled).view({n, sel, m});
}

torch::Tensor DeepPotImpl::descriptor(std::size_t part, int c, const torch::Tensor& env_c,
                                      const torch::Tensor& filled, const torch::Tensor& empty_s,
                                      const torch::Tensor& tebd, torch::Tensor* beyond_end) {
  const ModelConfig& config = parts_[part];
  const auto n = env_c.size(0);
  const int nt = config.ntypes();
  const auto nc = static_cast<double>(config.nnei());
  const auto m = config.embedding_width();
  const auto block = [&](const torch::Tensor& t, int type) {  // the slots of neighbour type `type`
    return t.narrow(1, config.sel_offset(type), config.sel[static_cast<std::size_t>(type)]);
  };
  if (config.three_body()) {
    // D = sum_{a <= b} (1 / (sel_a sel_b)) sum_{j in a, k in b} g_jk G_ab(g_jk), g_jk = r^_j . r^_k with
    // r^ the normalised columns 1..3 : n x M. Padding slots have r^ = 0, so g = 0 and g G(g) = 0: each
    // type's slots are cut after the last one any of the n centres fills. For a = b, g is symmetric: the
    // nets see the pairs j <= k once, off-diagonal terms counted twice.
    const auto dirs = env_c.narrow(2, 1, 3);
    std::vector<torch::Tensor> filled(static_cast<std::size_t>(nt));
    for (int a = 0; a < nt; ++a) {
      const auto len = filled_slots(block(dirs, a).ne(0.0).any(2));  // up to the last slot any centre fills
      filled[static_cast<std::size_t>(a)] = block(dirs, a).narrow(1, 0, len);
    }
    auto d = torch::zeros({n, m}, env_c.options());
    for (int a = 0; a < nt; ++a) {
      for (int b = a; b < nt; ++b) {
        const auto& ra = filled[static_cast<std::size_t>(a)];
        const auto& rb = filled[static_cast<std::size_t>(b)];
        const auto la = ra.size(1), lb = rb.size(1);
        if (la == 0 || lb == 0) continue;
        auto g = torch::matmul(ra, rb.transpose(1, 2)).reshape({n, la * lb});  // n x (la lb)
        torch::Tensor weighted = g;
        if (a == b) {
          const auto upper =
              torch::triu_indices(la, la, 0, torch::TensorOptions().dtype(torch::kLong).device(g.device()));
          g = g.index_select(1, upper[0] * la + upper[1]);  // the pairs j <= k
          weighted = torch::where(upper[0].eq(upper[1]), g, 2.0 * g);
        }
        const auto emb = embed(part, a, b, g, tebd, beyond_end);  // n x K x M
        const double pairs = static_cast<double>(config.sel[static_cast<std::size_t>(a)]) *
                             static_cast<double>(config.sel[static_cast<std::size_t>(b)]);
        d = d + torch::matmul(weighted.unsqueeze(1), emb).squeeze(1) / pairs;
      }
    }
    return d;
  }
  // se_e2_a: T = (1/N_c) sum_t R^_t^T G_t : n x 4 x M ; se_e2_r: the sum of G over the slots, n x M
  const bool radial = config.radial();
  auto t_mat = radial ? torch::zeros({n, m}, env_c.options()) : torch::zeros({n, 4, m}, env_c.options());
  for (int t = 0; t < nt; ++t) {
    if (config.sel[static_cast<std::size_t>(t)] == 0) continue;
    const auto rows = block(env_c, t);  // n x sel_t x cols
    const auto slots = empty_s.narrow(0, config.sel_offset(t), config.sel[static_cast<std::size_t>(t)]);
    const auto g = embed_filled(part, c, t, rows.select(2, 0), block(filled, t), slots, tebd, beyond_end);
    t_mat = radial ? t_mat + g.sum(1) : t_mat + torch::matmul(rows.transpose(1, 2), g);
  }
  // se_e2_r: D = (1/5) (1/N_c) sum_j G(s^_ij), DeePMD-kit's scale : n x M
  if (radial) return t_mat / (5.0 * nc);
  // se_e2_a: D = T^T T[:, :M<] : n x M x M< -> n x (M M<)
  t_mat = t_mat / nc;
  const auto axis = config.axis_neuron;
  return torch::matmul(t_mat.transpose(1, 2), t_mat.narrow(2, 0, axis)).reshape({n, m * axis});
}

}  // namespace deepkf
