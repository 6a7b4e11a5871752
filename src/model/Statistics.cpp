#include "src/model/Statistics.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/Error.hpp"
#include "src/model/Batch.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/ModelConfig.hpp"

namespace deepkf {

namespace {

constexpr double kStdFloor = 1e-2;

// std = sqrt(max(E[x^2] - E[x]^2, 0)), floored at 1e-2
double floored_std(double sum, double sumsq, double n) {
  const double mean = sum / n;
  return std::max(std::sqrt(std::max(sumsq / n - mean * mean, 0.0)), kStdFloor);
}

std::vector<double> to_vector(const torch::Tensor& t) {
  const auto c = t.to(torch::kCPU, torch::kFloat64).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

StatisticsSums::StatisticsSums(int ntypes_)
    : ntypes(ntypes_),
      rows(ntypes_, 0.0),
      sum0(ntypes_, 0.0),
      sumsq0(ntypes_, 0.0),
      sum123(ntypes_, 0.0),
      sumsq123(ntypes_, 0.0),
      ata(static_cast<std::size_t>(ntypes_) * ntypes_, 0.0),
      aty(ntypes_, 0.0) {}

void StatisticsSums::add_environment(const torch::Tensor& env, const torch::Tensor& centre_types) {
  torch::NoGradGuard guard;
  if (env.dim() != 4 || env.size(3) != 4 || centre_types.sizes() != env.sizes().slice(0, 2)) {
    throw ModelError(
        "statistics: environment matrix must be nframes x nloc x nnei x 4 with centre types "
        "nframes x nloc");
  }
  const auto nnei = env.size(2);
  const auto e = env.to(torch::kFloat64).reshape({-1, nnei, 4});
  const auto types = centre_types.reshape({-1}).to(torch::kInt64);
  // one-hot of the centre types: (nf nloc) x ntypes
  const auto onehot = torch::nn::functional::one_hot(types, ntypes).to(torch::kFloat64);
  // per-atom sums over slots, then per type: onehot^T [sum x0, sum x0^2, sum x123, sum x123^2]
  const auto c0 = e.select(2, 0);
  const auto c123 = e.narrow(2, 1, 3);
  const auto per_atom =
      torch::stack({c0.sum(1), c0.square().sum(1), c123.sum({1, 2}), c123.square().sum({1, 2})}, 1);
  const auto per_type = to_vector(onehot.t().matmul(per_atom));  // ntypes x 4
  const auto counts = to_vector(onehot.sum(0));
  for (int t = 0; t < ntypes; ++t) {
    rows[t] += counts[t] * static_cast<double>(nnei);
    sum0[t] += per_type[4 * t + 0];
    sumsq0[t] += per_type[4 * t + 1];
    sum123[t] += per_type[4 * t + 2];
    sumsq123[t] += per_type[4 * t + 3];
  }
}

void StatisticsSums::add_energy(const torch::Tensor& energy, const torch::Tensor& atom_types, bool per_atom) {
  torch::NoGradGuard guard;
  if (energy.dim() != 1 || atom_types.dim() != 2 || atom_types.size(0) != energy.size(0)) {
    throw ModelError("statistics: energy must be nframes and atom types nframes x natoms");
  }
  // A: nframes x ntypes per-type atom counts
  auto a = torch::nn::functional::one_hot(atom_types.to(torch::kInt64), ntypes).sum(1).to(torch::kFloat64);
  auto y = energy.to(torch::kFloat64);
  if (per_atom) {
    const double natoms = static_cast<double>(atom_types.size(1));
    a = a / natoms;
    y = y / natoms;
  }
  const auto ata_new = to_vector(a.t().matmul(a));
  const auto aty_new = to_vector(a.t().matmul(y));
  for (std::size_t k = 0; k < ata.size(); ++k) ata[k] += ata_new[k];
  for (std::size_t k = 0; k < aty.size(); ++k) aty[k] += aty_new[k];
  nframes += static_cast<double>(energy.size(0));
}

void StatisticsSums::add_batch(const Batch& batch, const ModelConfig& config) {
  torch::NoGradGuard guard;
  const auto rij = pair_vectors(batch.coord, batch.nlist, batch.shift, config.rcut);
  add_environment(environment_matrix(rij, config.rcut, config.rcut_smth), batch.atype);
  add_energy(batch.energy, batch.atype);
}

void StatisticsSums::merge(const StatisticsSums& other) {
  if (other.ntypes != ntypes) {
    throw ModelError("statistics: cannot merge sums of " + std::to_string(other.ntypes) + " types into " +
                     std::to_string(ntypes));
  }
  auto values = pack();
  const auto more = other.pack();
  for (std::size_t k = 0; k < values.size(); ++k) values[k] += more[k];
  unpack(values);
}

std::vector<double> StatisticsSums::pack() const {
  std::vector<double> out;
  for (const auto* v : {&rows, &sum0, &sumsq0, &sum123, &sumsq123, &ata, &aty})
    out.insert(out.end(), v->begin(), v->end());
  out.push_back(nframes);
  return out;
}

void StatisticsSums::unpack(const std::vector<double>& values) {
  const auto expected = pack().size();
  if (values.size() != expected) {
    throw ModelError("statistics: packed sums have " + std::to_string(values.size()) + " values, expected " +
                     std::to_string(expected));
  }
  std::size_t k = 0;
  for (auto* v : {&rows, &sum0, &sumsq0, &sum123, &sumsq123, &ata, &aty}) {
    for (auto& x : *v) x = values[k++];
  }
  nframes = values[k];
}

std::pair<torch::Tensor, torch::Tensor> StatisticsSums::descriptor_statistics(std::int64_t nnei) const {
  auto davg = torch::zeros({ntypes, nnei, 4}, torch::kFloat64);
  auto dstd = torch::ones({ntypes, nnei, 4}, torch::kFloat64);
  for (int t = 0; t < ntypes; ++t) {
    if (rows[t] <= 0.0) continue;
    // davg = (E[x0], 0, 0, 0)
    davg[t].select(1, 0).fill_(sum0[t] / rows[t]);
    // dstd = (std x0, pooled std x1..3 three times)
    dstd[t].select(1, 0).fill_(floored_std(sum0[t], sumsq0[t], rows[t]));
    dstd[t].narrow(1, 1, 3).fill_(floored_std(sum123[t], sumsq123[t], 3.0 * rows[t]));
  }
  return {davg, dstd};
}

std::vector<double> closest_neighbours(const torch::Tensor& rij, const torch::Tensor& nlist,
                                       const torch::Tensor& centre_types, const ModelConfig& config) {
  torch::NoGradGuard guard;
  const int nt = config.ntypes();
  std::vector<double> out(static_cast<std::size_t>(nt) * static_cast<std::size_t>(nt),
                          std::numeric_limits<double>::infinity());
  // r of every real slot within rcut, +inf elsewhere: nframes x nloc x nnei
  const auto r = rij.to(torch::kFloat64).square().sum(-1).sqrt();
  const auto real = nlist.ge(0).logical_and(r.lt(config.rcut));
  const auto masked =
      torch::where(real, r, torch::full({}, std::numeric_limits<double>::infinity(), r.options()));
  const auto types = centre_types.to(torch::kInt64);
  // a mixed-type list: each slot's neighbour type (the centres are the first nloc atoms of centre_types)
  const auto neighbour_types = config.mixed_types() ? slot_types(types, nlist) : torch::Tensor();
  const auto inf = torch::full({}, std::numeric_limits<double>::infinity(), r.options());
  for (int t = 0; t < nt; ++t) {
    // nearest neighbour of type t of each centre: nframes x nloc
    torch::Tensor nearest;
    if (config.mixed_types()) {
      nearest = std::get<0>(torch::where(neighbour_types.eq(t), masked, inf).min(2));
    } else {
      const auto sel_t = config.sel[static_cast<std::size_t>(t)];
      if (sel_t == 0) continue;
      nearest = std::get<0>(masked.narrow(2, config.sel_offset(t), sel_t).min(2));
    }
    const auto centres = types.narrow(1, 0, nlist.size(1));
    for (int c = 0; c < nt; ++c) {
      const auto of_c = nearest.masked_select(centres.eq(c));
      if (of_c.numel() == 0) continue;
      out[static_cast<std::size_t>(c * nt + t)] = of_c.min().item<double>();
    }
  }
  return out;
}

bool StatisticsSums::has_atoms_of(int t) const {
  // A^T A's diagonal is sum over frames of count_t^2: zero exactly when type t never occurs
  return ata[static_cast<std::size_t>(t) * ntypes + t] > 0.0;
}

EnergyBias StatisticsSums::energy_bias(const std::vector<std::string>& type_map) const {
  EnergyBias out;
  out.bias = torch::zeros({ntypes}, torch::kFloat64);
  std::vector<int64_t> present;
  for (int t = 0; t < ntypes; ++t) {
    if (has_atoms_of(t)) {
      present.push_back(t);
    } else {
      const std::string name = t < static_cast<int>(type_map.size()) ? type_map[t] : std::to_string(t);
      out.warnings.push_back("type '" + name + "' has no atoms in the data: its energy bias is set to 0");
    }
  }
  if (present.empty()) return out;
  const auto idx = torch::tensor(present, torch::kInt64);
  const auto ata_t =
      torch::tensor(ata, torch::kFloat64).view({ntypes, ntypes}).index_select(0, idx).index_select(1, idx);
  const auto aty_t = torch::tensor(aty, torch::kFloat64).index_select(0, idx);
  // min-norm solution of (A^T A) b = A^T y, which is the min-norm least-squares solution of A b = y
  // (A^T A and A share their null space); gelsd decides the rank from the singular values
  const auto sol = std::get<0>(torch::linalg_lstsq(ata_t, aty_t.unsqueeze(1), 1e-12, "gelsd")).squeeze(1);
  out.bias.index_copy_(0, idx, sol);
  return out;
}

std::vector<StatisticsSums> descriptor_sums(const ModelConfig& mc) {
  return std::vector<StatisticsSums>(mc.hybrid() ? mc.parts.size() : 1, StatisticsSums(mc.ntypes()));
}

void add_environments(std::vector<StatisticsSums>& sums, const torch::Tensor& rij,
                      const torch::Tensor& centre_types, const ModelConfig& mc) {
  torch::NoGradGuard guard;
  for (std::size_t k = 0; k < sums.size(); ++k)
    sums[k].add_environment(part_environment(rij, mc, k), centre_types);
}

std::pair<torch::Tensor, torch::Tensor> descriptor_statistics(const std::vector<StatisticsSums>& sums,
                                                              const ModelConfig& mc) {
  std::vector<torch::Tensor> davg, dstd;
  for (std::size_t k = 0; k < sums.size(); ++k) {
    const auto [mean, dev] = sums[k].descriptor_statistics(mc.hybrid() ? mc.parts.at(k).nnei() : mc.nnei());
    // se_atten's and se_e3_tebd's set_davg_zero: the rows are scaled, not shifted (std as computed)
    davg.push_back(mc.mixed_types() && mc.attention.set_davg_zero ? torch::zeros_like(mean) : mean);
    dstd.push_back(dev);
  }
  return {torch::cat(davg, 1), torch::cat(dstd, 1)};
}

}  // namespace deepkf
