#include "src/model/DeepPot.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <new>

#include "src/core/Error.hpp"
#include "src/model/EnvMatrix.hpp"

namespace deepkf {

namespace {

std::string shape_of(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

void check_inputs(const ModelConfig& config, const torch::Tensor& coord, const torch::Tensor& atype,
                  const torch::Tensor& nlist, const torch::Tensor& shift) {
  const bool ok = coord.defined() && atype.defined() && nlist.defined() && coord.dim() == 3 &&
                  coord.size(2) == 3 && atype.dim() == 2 && nlist.dim() == 3 &&
                  atype.size(0) == coord.size(0) && atype.size(1) == coord.size(1) &&
                  nlist.size(0) == coord.size(0) && nlist.size(1) <= coord.size(1) &&
                  nlist.size(2) == config.nnei() && atype.scalar_type() == torch::kInt64 &&
                  nlist.scalar_type() == torch::kInt64 &&
                  (!shift.defined() ||
                   (shift.dim() == 4 && shift.size(0) == nlist.size(0) && shift.size(1) == nlist.size(1) &&
                    shift.size(2) == nlist.size(2) && shift.size(3) == 3));
  if (!ok) {
    throw ModelError("model input shapes do not fit (nnei = " + std::to_string(config.nnei()) + "): coord " +
                     shape_of(coord) + ", atype " + shape_of(atype) + " (int64), nlist " + shape_of(nlist) +
                     " (int64), shift " + shape_of(shift));
  }
}

}  // namespace

DeepPotImpl::DeepPotImpl(const ModelConfig& config) : config_(config) {
  config_.validate();
  // Widths are checked for range, not for size: a model too large to allocate is the user's setting, not
  // a fault of ours, and is said so.
  const auto too_large = [this] {
    const auto list = [](const std::vector<int>& widths) {
      std::string out;
      for (const int w : widths) out += (out.empty() ? "" : ", ") + std::to_string(w);
      return "[" + out + "]";
    };
    return ResourceError("the model's weights do not fit in memory (embedding neuron " +
                         list(config_.embedding_neuron) + ", fitting_net neuron " +
                         list(config_.fitting_neuron) + ", " + std::to_string(config_.ntypes()) +
                         " element types" + (config_.file.empty() ? "" : " in " + config_.file) +
                         "): choose smaller networks");
  };
  try {
    build();
  } catch (const std::bad_alloc&) {
    throw too_large();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("alloc") == std::string::npos || what.find("memory") == std::string::npos) throw;
    throw too_large();
  }
}

void DeepPotImpl::build() {
  const int nt = config_.ntypes();
  const auto dtype = config_.precision;
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(config_.seed));
  const auto& tm = config_.type_map;
  // embedding nets descriptor by descriptor (a hybrid's parts in order, their names prefixed d0_, d1_, ...),
  // each in embedding_index order: per neighbour type, per (centre, neighbour) pair centre-major, or (se_e3)
  // per pair of neighbour types a <= b
  parts_ = config_.descriptor_parts();
  std::int64_t rows = 0;
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const ModelConfig& p = parts_[k];
    const std::string prefix = config_.hybrid() ? "d" + std::to_string(k) + "_" : "";
    const std::string label = config_.hybrid() ? "d" + std::to_string(k) + "." : "";
    first_net_.push_back(static_cast<int>(embedding_.size()));
    stat_offset_.push_back(rows);
    rows += p.nnei();
    const auto add_net = [&](const std::string& suffix, const std::string& pair, std::int64_t inputs = 1) {
      net_names_.push_back(label + "embedding[" + pair + "]");
      embedding_.push_back(register_module(prefix + "embedding_" + suffix,
                                           DenseNet(DenseNetImpl::Kind::Embedding, inputs, p.embedding_neuron,
                                                    p.embedding_resnet_dt, gen, dtype)));
    };
    if (p.type_embedded()) {
      // one-hot(t) -> tebd_t; one net of s (concat: of [s, embedded types]); strip: G_t of the types
      const auto& te = p.type_embedding;
      type_net_ = register_module("type_embedding", DenseNet(DenseNetImpl::Kind::Embedding, nt, te.neuron,
                                                             te.resnet_dt, gen, dtype, te.bias, te.linear));
      add_net("all", "all", p.stripped() ? 1 : 1 + p.type_input_dim());
      if (p.stripped()) {
        type_filter_ = register_module(
            "embedding_types", DenseNet(DenseNetImpl::Kind::Embedding, p.type_input_dim(), p.embedding_neuron,
                                        p.embedding_resnet_dt, gen, dtype));
      }
      if (p.attention_descriptor() && p.attention.layers > 0) {
        attention_ =
            register_module("attention", NeighborAttention(p.attention, p.embedding_width(), gen, dtype));
      }
      continue;
    }
    for (int a = 0; a < nt; ++a) {
      if (p.type_one_side) {
        add_net(std::to_string(a), tm[a]);
        continue;
      }
      for (int b = p.three_body() ? a : 0; b < nt; ++b)
        add_net(std::to_string(a) + "_" + std::to_string(b), tm[a] + "," + tm[b]);
    }
  }
  // one fitting net per centre type; under a type embedding one for all, reading [D_i, tebd_i]
  for (int c = 0; c < (config_.type_embedded() ? 1 : nt); ++c) {
    const std::string name = config_.type_embedded() ? "all" : std::to_string(c);
    net_names_.push_back("fitting[" + (config_.type_embedded() ? name : tm[c]) + "]");
    fitting_.push_back(register_module(
        "fitting_" + name, DenseNet(DenseNetImpl::Kind::Fitting, config_.fitting_input_dim(),
                                    config_.fitting_neuron, config_.fitting_resnet_dt, gen, dtype)));
  }
  set_trainable(config_.descriptor_trainable, config_.fitting_trainable);
  const auto opts = torch::TensorOptions().dtype(dtype);
  davg_ = register_buffer("davg", torch::zeros({nt, config_.statistics_slots(), 4}, opts));
  dstd_ = register_buffer("dstd", torch::ones({nt, config_.statistics_slots(), 4}, opts));
  energy_bias_ = register_buffer("energy_bias", torch::zeros({nt}, opts));
}

void DeepPotImpl::set_statistics(const torch::Tensor& davg, const torch::Tensor& dstd) {
  const std::vector<int64_t> want{config_.ntypes(), config_.statistics_slots(), 4};
  if (davg.sizes() != torch::IntArrayRef(want) || dstd.sizes() != torch::IntArrayRef(want)) {
    throw ModelError("statistics must be [ntypes, slots, 4] = [" + std::to_string(want[0]) + ", " +
                     std::to_string(want[1]) + ", 4], got davg " + shape_of(davg) + ", dstd " +
                     shape_of(dstd));
  }
  torch::NoGradGuard guard;
  davg_.copy_(davg);
  dstd_.copy_(dstd);
}

void DeepPotImpl::set_energy_bias(const torch::Tensor& bias) {
  if (bias.dim() != 1 || bias.size(0) != config_.ntypes()) {
    throw ModelError("energy bias must have ntypes = " + std::to_string(config_.ntypes()) + " entries, got " +
                     shape_of(bias));
  }
  torch::NoGradGuard guard;
  energy_bias_.copy_(bias);
}

torch::Tensor DeepPotImpl::energy_from_pairs(const torch::Tensor& rij, const torch::Tensor& centre_types,
                                             const torch::Tensor& neighbour_types,
                                             torch::Tensor* beyond_end) {
  const auto nf = rij.size(0);
  const auto nloc = rij.size(1);
  // R~ of each descriptor: (nf nloc) x nnei_k x cols, from its own slots (a hybrid's part: the nearest
  // sel_k[t] of each type) and its own cutoff; se_e2_r keeps column 0 (s), the only one it uses.
  std::vector<torch::Tensor> envs;
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const ModelConfig& p = parts_[k];
    envs.push_back(
        part_environment(rij, config_, k).reshape({nf * nloc, p.nnei(), 4}).narrow(2, 0, p.radial() ? 1 : 4));
  }
  const auto types = centre_types.reshape({nf * nloc});
  auto atom_energy = torch::zeros({nf * nloc}, rij.options());
  const auto tebd = type_vectors();
  // se_atten, se_e3_tebd: the switch w(r) and the neighbours' types of every slot, (nf nloc) x nnei
  torch::Tensor sw, slot_types;
  if (config_.mixed_types()) {
    sw = switch_weight(rij, config_.rcut, config_.rcut_smth).first.reshape({nf * nloc, config_.nnei()});
    slot_types = neighbour_types.reshape({nf * nloc, config_.nnei()});
  }
  for (int c = 0; c < config_.ntypes(); ++c) {
    const auto idx = torch::nonzero(types.eq(c)).squeeze(1);
    std::vector<torch::Tensor> parts;
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      // R^ = (R~ - davg[c]) / dstd[c] over this descriptor's rows of the statistics : n x nnei_k x cols
      const auto cols = envs[k].size(2);
      const auto mean = davg_[c].narrow(0, stat_offset_[k], parts_[k].nnei()).narrow(1, 0, cols);
      const auto dev = dstd_[c].narrow(0, stat_offset_[k], parts_[k].nnei()).narrow(1, 0, cols);
      const auto raw = envs[k].index_select(0, idx);
      const auto env_c = (raw - mean) / dev;
      if (config_.mixed_types()) {
        const auto sw_c = sw.index_select(0, idx);
        const auto types_c = slot_types.index_select(0, idx);
        parts.push_back(config_.attention_descriptor()
                            ? attention_descriptor(c, env_c, sw_c, types_c, tebd, beyond_end)
                            : three_body_tebd_descriptor(c, env_c, sw_c, types_c, tebd, beyond_end));
      } else {
        // a slot is filled where its raw s = w(r) / r is positive; an empty one's row is (0 - davg) / dstd
        // (se_e3 finds its filled slots from the directions itself)
        const auto filled = parts_[k].three_body() ? torch::Tensor() : raw.select(2, 0).gt(0.0);
        const auto empty_s = -(mean.select(1, 0) / dev.select(1, 0));
        parts.push_back(descriptor(k, c, env_c, filled, empty_s, tebd, beyond_end));
      }
    }
    // E_i = F_c(D_i) + bias[c], D_i the descriptors side by side; under a type embedding F([D_i, tebd_c])
    const auto d = parts.size() == 1 ? parts.front() : torch::cat(parts, 1);
    const auto e = fitting_net(c)->forward(fitting_input(d, tebd, c)).squeeze(-1) + energy_bias_[c];
    atom_energy = atom_energy.index_add(0, idx, e);
  }
  return atom_energy.reshape({nf, nloc});
}

torch::Tensor DeepPotImpl::atomic_energy(const torch::Tensor& coord, const torch::Tensor& atype,
                                         const torch::Tensor& nlist, const torch::Tensor& shift) {
  refuse_training("differentiable energies");
  check_inputs(config_, coord, atype, nlist, shift);
  const auto rij = pair_vectors(coord, nlist, shift, config_.rcut).to(config_.precision);
  return energy_from_pairs(rij, atype.narrow(1, 0, nlist.size(1)), neighbour_types(atype, nlist));
}

ModelOutput DeepPotImpl::evaluate(const torch::Tensor& coord, const torch::Tensor& atype,
                                  const torch::Tensor& nlist, const torch::Tensor& shift,
                                  const EvalOptions& options) {
  const bool create_graph = options.create_graph, need_atom_virial = options.atom_virial;
  check_inputs(config_, coord, atype, nlist, shift);
  if (compressed()) {
    if (create_graph || options.energy_gradient)
      refuse_training("outputs differentiable with respect to the weights");
    // The tables' kernels compute se_e2_a's and se_atten's T and se_e3's and se_e3_tebd's D
    // (DeepPotCompressed.cpp); se_e2_r evaluates its tables by LibTorch operations.
    if (table_kernel_ && coord.device().is_cpu() &&
        (config_.descriptor == "se_e2_a" || config_.attention_descriptor() || config_.three_body() ||
         config_.three_body_tebd()))
      return evaluate_compressed(coord, atype, nlist, shift, need_atom_virial);
  }
  torch::AutoGradMode grad_mode(true);
  const auto nf = nlist.size(0);
  const auto nloc = nlist.size(1);
  const auto nnei = nlist.size(2);
  const auto nall = coord.size(1);
  // r_ij as the leaf the forces and virials are derived from: nf x nloc x nnei x 3
  const auto rij =
      pair_vectors(coord.detach(), nlist, shift, config_.rcut).to(config_.precision).requires_grad_(true);
  ModelOutput out;
  torch::Tensor beyond_end;  // a compressed model's count of slots beyond its tables
  if (compressed()) beyond_end = torch::zeros({}, nlist.options());
  out.atom_energy = energy_from_pairs(rij, atype.narrow(1, 0, nloc), neighbour_types(atype, nlist),
                                      compressed() ? &beyond_end : nullptr);
  out.energy = out.atom_energy.sum(1);
  // g_ij = dE/dr_ij, zero on empty slots; with energy_gradient, d(sum E)/dw from the same backward pass.
  std::vector<torch::Tensor> inputs{rij};
  if (options.energy_gradient) {
    const auto weights = trainable_parameters();
    inputs.insert(inputs.end(), weights.begin(), weights.end());
  }
  const auto grads = torch::autograd::grad({out.energy.sum()}, inputs, {}, /*retain_graph=*/create_graph,
                                           /*create_graph=*/create_graph,
                                           /*allow_unused=*/options.energy_gradient);
  auto g = grads.front();
  for (std::size_t k = 1; k < grads.size(); ++k)
    out.energy_gradient.push_back(grads[k].defined() ? grads[k].detach() : torch::zeros_like(inputs[k]));
  const auto mask = nlist.ge(0).unsqueeze(-1);
  g = torch::where(mask, g, torch::zeros({}, g.options()));
  // F_i = -dE/dx_i = sum_j g_ij (r_ij = x_j - x_i) ; F_j -= g_ij over every slot naming j
  const auto frame_offset = torch::arange(nf, nlist.options()).mul(nall).view({nf, 1, 1});
  const auto flat_j = (nlist.clamp_min(0) + frame_offset).reshape({-1});
  const auto centre = torch::constant_pad_nd(g.sum(2), {0, 0, 0, nall - nloc});
  out.force =
      centre -
      torch::zeros({nf * nall, 3}, g.options()).index_add(0, flat_j, g.reshape({-1, 3})).view({nf, nall, 3});
  // W_ab = -sum_ij g_ij,a r_ij,b
  const auto pair_virial = -(g.unsqueeze(-1) * rij.unsqueeze(-2)).reshape({nf, nloc, nnei, 9});
  out.virial = pair_virial.sum({1, 2});
  if (need_atom_virial) {
    out.atom_virial = torch::zeros({nf * nall, 9}, g.options())
                          .index_add(0, flat_j, pair_virial.reshape({-1, 9}))
                          .view({nf, nall, 9});
  }
  if (compressed()) out.beyond_table = beyond_end.item<std::int64_t>();
  if (!create_graph) {
    out.energy = out.energy.detach();
    out.atom_energy = out.atom_energy.detach();
    out.force = out.force.detach();
    out.virial = out.virial.detach();
    if (out.atom_virial.defined()) out.atom_virial = out.atom_virial.detach();
  }
  return out;
}

}  // namespace deepkf
