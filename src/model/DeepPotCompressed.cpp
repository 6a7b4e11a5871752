// The compressed model (docs/compression.md): tables in place of the embedding nets, evaluated on the CPU by
// the tables' kernels (TabulatedDescriptor) for se_e2_a, se_atten, se_e3 and se_e3_tebd, and the
// compression itself.
#include <fmt/format.h>
#include <torch/torch.h>

#include "src/core/Error.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/TabulatedDescriptor.hpp"

namespace deepkf {

ModelOutput DeepPotImpl::evaluate_compressed(const torch::Tensor& coord, const torch::Tensor& atype,
                                             const torch::Tensor& nlist, const torch::Tensor& shift,
                                             bool need_atom_virial) {
  torch::NoGradGuard no_grad;
  const auto nf = nlist.size(0);
  const auto nloc = nlist.size(1);
  const auto m = config_.embedding_width();
  const auto axis = config_.axis_neuron;
  const bool three_body = config_.three_body() || config_.three_body_tebd();
  StripFactors strip;
  if (config_.three_body_tebd()) {
    strip.pair_factors = three_body_factors();
  } else if (config_.stripped()) {
    strip.scaled = &strip_tables();
    if (!gated_tables_.empty()) strip.gated = &gated_tables_;
  }
  TabulatedDescriptor descriptor(*table_, config_, davg_, dstd_, coord, atype, nlist, shift, strip);
  const auto tebd = type_vectors();
  // T = R^T G / N_c of every centre, (nf nloc) x 4 x M; three-body: D itself, (nf nloc) x M
  const auto t_all = descriptor.forward();
  const auto types = atype.narrow(1, 0, nloc).reshape({nf * nloc}).to(torch::kCPU);
  auto atom_energy = torch::zeros({nf * nloc}, t_all.options());
  auto grad_t = torch::zeros_like(t_all);
  for (int c = 0; c < config_.ntypes(); ++c) {
    const auto idx = torch::nonzero(types.eq(c)).squeeze(1);
    const auto n = idx.size(0);
    if (n == 0) continue;
    const auto t_mat = t_all.index_select(0, idx);  // n x 4 x M (three-body: D, n x M)
    const auto t_axis = three_body ? torch::Tensor() : t_mat.narrow(2, 0, axis);  // n x 4 x M<
    // D = T^T T< : n x (M M<) ; E_i = F_c(D_i) + bias[c] with dE/dD
    const auto d = three_body ? t_mat : torch::bmm(t_mat.transpose(1, 2), t_axis).reshape({n, m * axis});
    const auto width = d.size(1);
    // under a type embedding the input is [D_i, tebd_c] (se_atten, se_e3_tebd: with concat_output_tebd):
    // dE/dD is the first M M< (three-body: M) of its gradient
    const auto input = config_.mixed_types() && config_.attention.concat_output_tebd
                           ? torch::cat({d, tebd[c].expand({n, tebd.size(1)})}, 1)
                           : fitting_input(d, tebd, c);
    const auto [e, grad_in] = fitting_net(c)->forward_with_input_gradient(input);
    atom_energy.index_copy_(0, idx, e.squeeze(-1) + energy_bias_[c]);
    if (three_body) {
      grad_t.index_copy_(0, idx, grad_in.narrow(1, 0, width));
      continue;
    }
    const auto grad_d = grad_in.narrow(1, 0, width).reshape({n, m, axis});
    // dE/dT_am = sum_k dE/dD_mk T_ak + [m < M<] sum_m' dE/dD_m'm T_am'
    auto grad = torch::bmm(t_axis, grad_d.transpose(1, 2));
    grad.narrow(2, 0, axis).add_(torch::bmm(t_mat, grad_d));
    grad_t.index_copy_(0, idx, grad);
  }
  // forces and virials from dE/dT (three-body: dE/dD)
  auto forces = descriptor.backward(grad_t, need_atom_virial);
  ModelOutput out;
  out.atom_energy = atom_energy.view({nf, nloc});
  out.energy = out.atom_energy.sum(1);
  out.force = forces.force;
  out.virial = forces.virial;
  out.atom_virial = forces.atom_virial;
  out.beyond_table = descriptor.beyond_table();
  return out;
}

const std::vector<torch::Tensor>& DeepPotImpl::strip_tables() {
  if (!strip_tables_.empty()) return strip_tables_;
  torch::NoGradGuard no_grad;
  const int nt = config_.ntypes();
  const auto tebd = type_vectors();
  const auto& coef = table_->coefficients(0);  // intervals x 6 x M: G(s) = sum_k c_k t^k, linear in c
  const auto times = [&](const torch::Tensor& factor) {
    return (coef * factor.to(coef.scalar_type()).view({1, 1, -1})).contiguous();
  };
  if (!config_.attention_descriptor()) {
    for (int c = 0; c < (config_.type_one_side ? 1 : nt); ++c)
      for (int t = 0; t < nt; ++t) strip_tables_.push_back(times(strip_factor(tebd, c, t)));
    return strip_tables_;
  }
  // se_atten: G_t([tebd_t, tebd_c]) per centre type and neighbour type t, t = nt for an empty slot (the zero
  // vector); G (1 + G_t) without the smooth gates, G and G G_t (weighted by w(r) in the kernel) with them
  const auto padded = torch::cat({tebd, torch::zeros({1, tebd.size(1)}, tebd.options())});
  for (int c = 0; c < (config_.type_one_side ? 1 : nt); ++c) {
    for (int t = 0; t <= nt; ++t) {
      const auto pair = config_.type_one_side ? padded[t] : torch::cat({padded[t], tebd[c]});
      const auto gt = type_filter_->forward(pair.unsqueeze(0)).squeeze(0);
      if (config_.attention.smooth) {
        strip_tables_.push_back(coef);
        gated_tables_.push_back(times(gt));
      } else {
        strip_tables_.push_back(times(1.0 + gt));
      }
    }
  }
  return strip_tables_;
}

const torch::Tensor& DeepPotImpl::three_body_factors() {
  if (three_body_factors_.defined()) return three_body_factors_;
  torch::NoGradGuard no_grad;
  const int nt = config_.ntypes();
  const auto tebd = type_vectors();
  // G_t([tebd_a, tebd_b]) of every ordered pair of types, the empty slot's zero vector as type nt: row
  // a (nt + 1) + b, as three_body_tebd_descriptor orders them
  const auto padded = torch::cat({tebd, torch::zeros({1, tebd.size(1)}, tebd.options())});
  const auto pairs = torch::cat({padded.repeat_interleave(nt + 1, 0), padded.repeat({nt + 1, 1})}, 1);
  const auto gt = type_filter_->forward(pairs).view({nt + 1, nt + 1, -1});
  // H_ab = (G_t(a, b) + G_t(b, a)) / 2: the kernel visits each unordered pair of slots once
  three_body_factors_ = (0.5 * (gt + gt.transpose(0, 1))).to(torch::kCPU).contiguous();
  return three_body_factors_;
}

void DeepPotImpl::refuse_training(const char* what) const {
  if (!compressed()) return;
  throw ModelError(std::string("a compressed model cannot give ") + what +
                   ": training continues on an uncompressed model (the one `deepkf compress` was given)");
}

void DeepPotImpl::compress(const TableSettings& settings) {
  if (const auto why = config_.compression_refusal(); !why.empty()) throw ModelError(why);
  if (compressed()) {
    throw ModelError("the model is already compressed (step " +
                     fmt::format("{}", table_->to_json().value("step", 0.0)) +
                     "); compress the uncompressed model it was made from");
  }
  const std::vector<std::string> names(net_names_.begin(),
                                       net_names_.begin() + static_cast<std::ptrdiff_t>(embedding_.size()));
  table_ = register_module(
      "table", EmbeddingTable(embedding_, names, config_, davg_, dstd_, training_range_, settings));
  strip_tables_.clear();
  gated_tables_.clear();
  three_body_factors_ = torch::Tensor();
}

void DeepPotImpl::prepare_tables(const nlohmann::json& layout, const std::string& where) {
  if (compressed()) throw ModelError(where + ": the model already has tables");
  if (const auto why = config_.compression_refusal(); !why.empty())
    throw ModelError(where + ": the model file has tables for a model that has none: " + why);
  table_ = register_module("table", EmbeddingTable(layout, config_, where));
  strip_tables_.clear();
  gated_tables_.clear();
  three_body_factors_ = torch::Tensor();
}

}  // namespace deepkf
