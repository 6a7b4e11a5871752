// The compressed model (docs/compression.md): tables in place of the embedding nets, evaluated on the CPU by
// the tables' kernel (TabulatedDescriptor) for se_e2_a and se_atten, and the compression itself.
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
  const auto* scaled = config_.stripped() ? &strip_tables() : nullptr;
  TabulatedDescriptor descriptor(*table_, config_, davg_, dstd_, coord, atype, nlist, shift, scaled,
                                 gated_tables_.empty() ? nullptr : &gated_tables_);
  const auto tebd = type_vectors();
  // T = R^T G / N_c of every centre: (nf nloc) x 4 x M
  const auto t_all = descriptor.forward();
  const auto types = atype.narrow(1, 0, nloc).reshape({nf * nloc}).to(torch::kCPU);
  auto atom_energy = torch::zeros({nf * nloc}, t_all.options());
  auto grad_t = torch::zeros_like(t_all);
  for (int c = 0; c < config_.ntypes(); ++c) {
    const auto idx = torch::nonzero(types.eq(c)).squeeze(1);
    const auto n = idx.size(0);
    if (n == 0) continue;
    const auto t_mat = t_all.index_select(0, idx);  // n x 4 x M
    const auto t_axis = t_mat.narrow(2, 0, axis);   // n x 4 x M<
    // D = T^T T< : n x (M M<) ; E_i = F_c(D_i) + bias[c] with dE/dD
    const auto d = torch::bmm(t_mat.transpose(1, 2), t_axis).reshape({n, m * axis});
    // under a type embedding the input is [D_i, tebd_c] (se_atten: with concat_output_tebd): dE/dD is the
    // first M M< of its gradient
    const auto input = config_.attention_descriptor() && config_.attention.concat_output_tebd
                           ? torch::cat({d, tebd[c].expand({n, tebd.size(1)})}, 1)
                           : fitting_input(d, tebd, c);
    const auto [e, grad_in] = fitting_net(c)->forward_with_input_gradient(input);
    const auto grad_d = grad_in.narrow(1, 0, m * axis).reshape({n, m, axis});
    // dE/dT_am = sum_k dE/dD_mk T_ak + [m < M<] sum_m' dE/dD_m'm T_am'
    auto grad = torch::bmm(t_axis, grad_d.transpose(1, 2));
    grad.narrow(2, 0, axis).add_(torch::bmm(t_mat, grad_d));
    atom_energy.index_copy_(0, idx, e.squeeze(-1) + energy_bias_[c]);
    grad_t.index_copy_(0, idx, grad);
  }
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
}

void DeepPotImpl::prepare_tables(const nlohmann::json& layout, const std::string& where) {
  if (compressed()) throw ModelError(where + ": the model already has tables");
  if (const auto why = config_.compression_refusal(); !why.empty())
    throw ModelError(where + ": the model file has tables for a model that has none: " + why);
  table_ = register_module("table", EmbeddingTable(layout, config_, where));
  strip_tables_.clear();
  gated_tables_.clear();
}

}  // namespace deepkf
