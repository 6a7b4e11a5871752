#include "src/model/TabulatedDescriptor.hpp"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <atomic>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// Centres per task of the thread pool: enough to amortise the scheduling, small enough to balance.
constexpr std::int64_t kGrain = 8;

}  // namespace

TabulatedDescriptor::TabulatedDescriptor(const EmbeddingTableImpl& table, const ModelConfig& config,
                                         const torch::Tensor& davg, const torch::Tensor& dstd,
                                         const torch::Tensor& coord, const torch::Tensor& atype,
                                         const torch::Tensor& nlist, const torch::Tensor& shift,
                                         const StripFactors& strip)
    : table_(table), config_(config), strip_(strip) {
  for (const auto* t : {&davg, &coord, &atype, &nlist, &shift}) {
    if (t->defined() && !t->device().is_cpu()) {
      throw ModelError(
          "the tables' kernel runs on the CPU (DeepPot::evaluate takes another path on other devices); "
          "got tensors on " +
          t->device().str());
    }
  }
  const auto dtype = config.precision;
  davg_ = davg.to(dtype).contiguous();
  dstd_ = dstd.to(dtype).contiguous();
  coord_ = coord.detach().to(dtype).contiguous();
  atype_ = atype.to(torch::kInt64).contiguous();
  nlist_ = nlist.to(torch::kInt64).contiguous();
  if (shift.defined()) shift_ = shift.detach().to(dtype).contiguous();
  if (strip_.pair_factors.defined()) strip_.pair_factors = strip_.pair_factors.to(dtype).contiguous();
}

template <typename Real>
tabulated::Problem<Real> TabulatedDescriptor::problem() const {
  tabulated::Problem<Real> p;
  p.nframes = nlist_.size(0);
  p.nloc = nlist_.size(1);
  p.nnei = nlist_.size(2);
  p.nall = coord_.size(1);
  p.width = config_.embedding_width();
  p.coord = coord_.data_ptr<Real>();
  p.atype = atype_.data_ptr<std::int64_t>();
  p.nlist = nlist_.data_ptr<std::int64_t>();
  p.shift = shift_.defined() ? shift_.data_ptr<Real>() : nullptr;
  p.davg = davg_.data_ptr<Real>();
  p.dstd = dstd_.data_ptr<Real>();
  p.ntypes = config_.ntypes();
  p.mixed_types = config_.mixed_types();
  if (!p.mixed_types) {
    for (int t = 0; t < config_.ntypes(); ++t)
      p.slot_type.insert(p.slot_type.end(), config_.sel[static_cast<std::size_t>(t)], t);
  }
  p.type_one_side = config_.type_one_side;
  p.rcut = config_.rcut;
  p.rcut_smth = config_.rcut_smth;
  if (strip_.scaled != nullptr) {
    for (const auto& coef : *strip_.scaled)
      p.tables.push_back({table_.grid(0), coef.template data_ptr<Real>()});
    if (strip_.gated != nullptr) {
      for (const auto& coef : *strip_.gated)
        p.gated.push_back({table_.grid(0), coef.template data_ptr<Real>()});
    }
  } else {
    for (std::size_t k = 0; k < table_.size(); ++k)
      p.tables.push_back({table_.grid(k), table_.coefficients(k).template data_ptr<Real>()});
  }
  return p;
}

template <typename Real>
tabulated::ThreeBodyProblem<Real> TabulatedDescriptor::three_body_problem() const {
  tabulated::ThreeBodyProblem<Real> p;
  p.atoms = problem<Real>();
  const int nt = config_.ntypes();
  const bool tebd = config_.three_body_tebd();
  p.types = tebd ? nt + 1 : nt;
  const double nnei = static_cast<double>(p.atoms.nnei);
  for (int a = 0; a < p.types; ++a) {
    for (int b = 0; b < p.types; ++b) {
      p.pair_table.push_back(tebd ? 0 : config_.embedding_index(a, b));
      // se_e3: each type pair averaged over its sel_a sel_b slot pairs, the pairs j < k of one type
      // counting for both orders; se_e3_tebd: all N^2 ordered pairs
      const double pairs = tebd ? nnei * nnei
                                : static_cast<double>(config_.sel[static_cast<std::size_t>(a)]) *
                                      static_cast<double>(config_.sel[static_cast<std::size_t>(b)]);
      const double orders = tebd || a == b ? 2.0 : 1.0;
      p.pair_scale.push_back(pairs > 0 ? static_cast<Real>(orders / pairs) : Real(0));
    }
  }
  if (tebd) {
    if (!strip_.pair_factors.defined())
      throw ModelError("the three-body kernel of se_e3_tebd needs its type pairs' factors");
    p.factor = strip_.pair_factors.template data_ptr<Real>();
    p.gated = config_.attention.smooth;
  }
  return p;
}

template <typename Real>
torch::Tensor TabulatedDescriptor::forward_as() {
  const auto opts = torch::TensorOptions().dtype(config_.precision);
  std::atomic<std::int64_t> beyond{0};
  torch::Tensor out;
  if (three_body()) {
    const auto p = three_body_problem<Real>();
    const auto n = p.atoms.nframes * p.atoms.nloc;
    out = torch::empty({n, p.atoms.width}, opts);
    Real* d = out.data_ptr<Real>();
    at::parallel_for(0, n, kGrain, [&](std::int64_t begin, std::int64_t end) {
      beyond += tabulated::three_body_forward(p, begin, end, d);
    });
  } else {
    const auto p = problem<Real>();
    const auto n = p.nframes * p.nloc;
    out = torch::empty({n, 4, p.width}, opts);
    Real* t = out.data_ptr<Real>();
    at::parallel_for(0, n, kGrain, [&](std::int64_t begin, std::int64_t end) {
      beyond += tabulated::forward(p, begin, end, t);
    });
  }
  beyond_ = beyond.load();
  return out;
}

torch::Tensor TabulatedDescriptor::forward() {
  if (config_.precision == torch::kFloat32) return forward_as<float>();
  return forward_as<double>();
}

template <typename Real>
TabulatedDescriptor::Forces TabulatedDescriptor::backward_as(const torch::Tensor& grad_in,
                                                             bool need_atom_virial) const {
  const auto three = three_body() ? three_body_problem<Real>() : tabulated::ThreeBodyProblem<Real>();
  const auto p = three_body() ? three.atoms : problem<Real>();
  const auto n = p.nframes * p.nloc;
  const auto opts = torch::TensorOptions().dtype(config_.precision);
  const torch::Tensor grad = grad_in.to(config_.precision).contiguous();
  torch::Tensor pair_grad = torch::empty({n, p.nnei, 3}, opts);
  torch::Tensor centre_force = torch::empty({n, 3}, opts);
  torch::Tensor centre_virial = torch::empty({n, 9}, opts);
  const Real* g = grad.data_ptr<Real>();
  Real* pg = pair_grad.data_ptr<Real>();
  Real* cf = centre_force.data_ptr<Real>();
  Real* cv = centre_virial.data_ptr<Real>();
  at::parallel_for(0, n, kGrain, [&](std::int64_t begin, std::int64_t end) {
    if (three_body()) {
      tabulated::three_body_backward(three, begin, end, g, pg, cf, cv);
    } else {
      tabulated::backward(p, begin, end, g, pg, cf, cv);
    }
  });
  Forces out;
  // F_i = sum_j g_ij on the centres, then F_j -= g_ij over every slot naming j
  out.force = torch::zeros({p.nframes, p.nall, 3}, opts);
  out.force.narrow(1, 0, p.nloc).copy_(centre_force.view({p.nframes, p.nloc, 3}));
  if (need_atom_virial) out.atom_virial = torch::zeros({p.nframes, p.nall, 9}, opts);
  tabulated::scatter_pairs(p, pg, out.force.data_ptr<Real>(),
                           need_atom_virial ? out.atom_virial.data_ptr<Real>() : nullptr);
  // W = sum over centres, in centre order
  out.virial = torch::zeros({p.nframes, 9}, opts);
  Real* w = out.virial.data_ptr<Real>();
  for (std::int64_t a = 0; a < n; ++a)
    for (int k = 0; k < 9; ++k) w[(a / p.nloc) * 9 + k] += cv[a * 9 + k];
  return out;
}

TabulatedDescriptor::Forces TabulatedDescriptor::backward(const torch::Tensor& grad,
                                                          bool need_atom_virial) const {
  if (config_.precision == torch::kFloat32) return backward_as<float>(grad, need_atom_virial);
  return backward_as<double>(grad, need_atom_virial);
}

}  // namespace deepkf
