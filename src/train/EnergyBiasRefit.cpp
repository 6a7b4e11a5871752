#include "src/train/EnergyBiasRefit.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/model/Batch.hpp"
#include "src/model/Statistics.hpp"
#include "src/train/DataSetup.hpp"

namespace deepkf {

BiasRefit refit_energy_bias(DeepPot& model, const std::vector<FrameSubset>& parts,
                            const std::vector<int>& batch_size, torch::Device device, Communicator& comm) {
  torch::NoGradGuard no_grad;
  const ModelConfig& mcfg = model->config();
  StatisticsSums sums(mcfg.ntypes());
  double squares = 0.0;  // sum_k (r_k / N_k)^2
  for (std::size_t i = 0; i < parts.size(); ++i) {
    for_rank_frames(parts[i], std::max(1, batch_size[i]), comm, [&](const System& chunk, std::int64_t) {
      std::vector<std::int64_t> frames(static_cast<std::size_t>(chunk.nframes));
      std::iota(frames.begin(), frames.end(), std::int64_t{0});
      const Batch b = make_batch(chunk, frames, mcfg, device, mcfg.precision);
      const auto predicted = model->atomic_energy(b.coord, b.atype, b.nlist, b.shift).sum(1);
      const auto residual = (b.energy.to(torch::kFloat64) - predicted.to(torch::kFloat64)).cpu();
      const auto types = b.atype.cpu();
      sums.add_energy(residual, types, true);
      squares += (residual / static_cast<double>(types.size(1))).square().sum().item<double>();
    });
  }
  auto packed = sums.pack();
  packed.push_back(squares);
  if (comm.size() > 1) comm.allreduce_sum(packed.data(), packed.size());
  squares = packed.back();
  packed.pop_back();
  sums.unpack(packed);

  BiasRefit out;
  out.frames = static_cast<std::int64_t>(sums.nframes);
  if (out.frames == 0) return out;
  const EnergyBias fit = sums.energy_bias(mcfg.type_map);
  const int nt = mcfg.ntypes();
  for (int t = 0; t < nt; ++t) {
    if (!sums.has_atoms_of(t))
      out.warnings.push_back("type '" + mcfg.type_map[static_cast<std::size_t>(t)] +
                             "' has no atoms in the training data: its energy bias is kept");
  }
  out.shift.assign(fit.bias.data_ptr<double>(), fit.bias.data_ptr<double>() + nt);
  // sum_k (r_k/N_k - a_k.d)^2 = sum (r/N)^2 - 2 d.(A^T y) + d^T (A^T A) d, from the same sums
  double after = squares;
  for (int s = 0; s < nt; ++s) {
    after -= 2.0 * out.shift[s] * sums.aty[static_cast<std::size_t>(s)];
    for (int t = 0; t < nt; ++t)
      after += out.shift[s] * sums.ata[static_cast<std::size_t>(s * nt + t)] * out.shift[t];
  }
  out.rmse_before = std::sqrt(squares / sums.nframes);
  out.rmse_after = std::sqrt(std::max(after, 0.0) / sums.nframes);
  model->set_energy_bias(model->energy_bias().to(torch::kCPU, torch::kFloat64) + fit.bias);
  return out;
}

}  // namespace deepkf
