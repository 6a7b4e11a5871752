#include "src/train/EnergyBiasRefit.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/model/Batch.hpp"
#include "src/model/Statistics.hpp"
#include "src/train/DataSetup.hpp"

namespace deepkf {
namespace {

// The per-atom normal equations of the residuals r_k = E_k^ref - E_k of a set of frames (rows n_k / N_k,
// values r_k / N_k) and sum_k (r_k / N_k)^2, summed over the ranks.
struct ResidualSums {
  StatisticsSums sums;
  double squares = 0.0;

  // The per-atom RMSE once the shift d is added: sum_k (r_k/N_k - a_k.d)^2 = sum (r/N)^2 - 2 d.(A^T y) +
  // d^T (A^T A) d, from the same sums.
  double rmse_with(const std::vector<double>& d) const {
    if (sums.nframes == 0.0) return 0.0;
    const auto nt = d.size();
    double s = squares;
    for (std::size_t a = 0; a < nt; ++a) {
      s -= 2.0 * d[a] * sums.aty[a];
      for (std::size_t b = 0; b < nt; ++b) s += d[a] * sums.ata[a * nt + b] * d[b];
    }
    return std::sqrt(std::max(s, 0.0) / sums.nframes);
  }
};

ResidualSums residual_sums(DeepPot& model, FrameParts set, torch::Device device, Communicator& comm) {
  torch::NoGradGuard no_grad;
  const ModelConfig& mcfg = model->config();
  ResidualSums out{StatisticsSums(mcfg.ntypes()), 0.0};
  for (std::size_t i = 0; i < set.parts.size(); ++i) {
    for_rank_frames(
        set.parts[i], std::max(1, set.batch_size[i]), comm, [&](const System& chunk, std::int64_t) {
          std::vector<std::int64_t> frames(static_cast<std::size_t>(chunk.nframes));
          std::iota(frames.begin(), frames.end(), std::int64_t{0});
          const Batch b = make_batch(chunk, frames, mcfg, device, mcfg.precision);
          const auto predicted = model->atomic_energy(b.coord, b.atype, b.nlist, b.shift).sum(1);
          const auto residual = (b.energy.to(torch::kFloat64) - predicted.to(torch::kFloat64)).cpu();
          const auto types = b.atype.cpu();
          out.sums.add_energy(residual, types, true);
          out.squares += (residual / static_cast<double>(types.size(1))).square().sum().item<double>();
        });
  }
  auto packed = out.sums.pack();
  packed.push_back(out.squares);
  if (comm.size() > 1) comm.allreduce_sum(packed.data(), packed.size());
  out.squares = packed.back();
  packed.pop_back();
  out.sums.unpack(packed);
  return out;
}

}  // namespace

EnergyBias label_energy_bias(const ModelConfig& config, FrameParts frames, const torch::Tensor& fallback,
                             Communicator& comm) {
  StatisticsSums sums(config.ntypes());
  for (std::size_t i = 0; i < frames.parts.size(); ++i) {
    for_rank_frames(
        frames.parts[i], std::max(1, frames.batch_size[i]), comm, [&](const System& chunk, std::int64_t) {
          const auto types =
              torch::tensor(std::vector<std::int64_t>(chunk.atom_types.begin(), chunk.atom_types.end()))
                  .repeat({chunk.nframes, 1});
          sums.add_energy(torch::tensor(chunk.energy, torch::kFloat64), types);
        });
  }
  auto packed = sums.pack();
  if (comm.size() > 1) comm.allreduce_sum(packed.data(), packed.size());
  sums.unpack(packed);
  EnergyBias out = sums.energy_bias(config.type_map);
  out.warnings.clear();
  const auto kept = fallback.to(torch::kCPU, torch::kFloat64);
  for (int t = 0; t < config.ntypes(); ++t) {
    if (sums.has_atoms_of(t)) continue;
    out.bias[t] = kept[t];
    out.warnings.push_back("type '" + config.type_map[static_cast<std::size_t>(t)] +
                           "' has no atoms in the frames: its energy bias is kept");
  }
  return out;
}

BiasRefit refit_energy_bias(DeepPot& model, FrameParts train, FrameParts valid, torch::Device device,
                            Communicator& comm) {
  const ModelConfig& mcfg = model->config();
  const ResidualSums fitted = residual_sums(model, train, device, comm);
  BiasRefit out;
  out.frames = static_cast<std::int64_t>(fitted.sums.nframes);
  if (out.frames == 0) return out;
  const EnergyBias fit = fitted.sums.energy_bias(mcfg.type_map);
  const int nt = mcfg.ntypes();
  for (int t = 0; t < nt; ++t) {
    if (!fitted.sums.has_atoms_of(t))
      out.warnings.push_back("type '" + mcfg.type_map[static_cast<std::size_t>(t)] +
                             "' has no atoms in the training data: its energy bias is kept");
  }
  out.shift.assign(fit.bias.data_ptr<double>(), fit.bias.data_ptr<double>() + nt);
  out.rmse_before = fitted.rmse_with(std::vector<double>(static_cast<std::size_t>(nt), 0.0));
  out.rmse_after = fitted.rmse_with(out.shift);

  const ResidualSums held_out = residual_sums(model, valid, device, comm);
  out.valid_frames = static_cast<std::int64_t>(held_out.sums.nframes);
  out.valid_before = held_out.rmse_with(std::vector<double>(static_cast<std::size_t>(nt), 0.0));
  out.valid_after = held_out.rmse_with(out.shift);
  out.applied = out.valid_frames == 0 || out.valid_after <= out.valid_before;
  if (out.applied) model->set_energy_bias(model->energy_bias().to(torch::kCPU, torch::kFloat64) + fit.bias);
  return out;
}

BiasRefit refit_energy_bias(DeepPot& model, FrameParts train, torch::Device device, Communicator& comm) {
  const std::vector<FrameSubset> none;
  const std::vector<int> no_sizes;
  return refit_energy_bias(model, train, {none, no_sizes}, device, comm);
}

std::string BiasRefit::shift_text(const std::vector<std::string>& type_map) const {
  std::string text;
  for (std::size_t t = 0; t < shift.size(); ++t)
    text += fmt::format("{}{} {:+.4f}", t ? ", " : "", type_map[t], shift[t]);
  return text;
}

}  // namespace deepkf
