#include "src/uncertainty/EnsembleDeviation.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "src/core/Error.hpp"
#include "src/model/Batch.hpp"

namespace deepkf {

std::vector<EnsembleFrame> ensemble_deviation(const std::vector<LoadedModel>& models,
                                              const std::vector<FrameSubset>& sets,
                                              const DeviationOptions& options) {
  torch::NoGradGuard no_grad;
  std::vector<EnsembleFrame> rows;
  const auto k = static_cast<std::int64_t>(models.size());
  for (const auto& set : sets) {
    if (options.real_error && (set.info().nframes > 0) && !set.info().has_force) {
      throw DataError(fmt::format("{} has no forces: a real error needs labelled frames", set.info().source));
    }
    for (std::int64_t f = 0; f < set.nframes(); ++f) {
      const System frame = set.read({f});
      const auto n = frame.natoms;
      if (options.real_error && frame.energy.empty())
        throw DataError(
            fmt::format("{} has no energies: a real error needs labelled frames", set.info().source));
      // forces: natoms x K x 3 (atom-major, as force_deviation reads them); virials: K x 9
      auto forces = torch::empty({n, k, 3}, torch::kFloat64);
      auto virials = torch::empty({k, 9}, torch::kFloat64);
      auto energies = torch::empty({k}, torch::kFloat64);  // per atom
      FrameErrors errors;
      for (std::int64_t m = 0; m < k; ++m) {
        const auto& loaded = models[static_cast<std::size_t>(m)];
        DeepPot model = loaded.model;  // a handle: evaluation is not const
        const Batch b = make_batch(frame, {0}, loaded.config, torch::kCPU, loaded.config.precision);
        const ModelOutput out = model->evaluate(b.coord, b.atype, b.nlist, b.shift);
        if (!torch::isfinite(out.force).all().item<bool>() || !torch::isfinite(out.virial).all().item<bool>())
          throw ModelError(
              fmt::format("model {} of the ensemble predicts non-finite forces or virial for "
                          "frame {} of {}",
                          m + 1, set.frames[static_cast<std::size_t>(f)], set.info().source));
        if (m == 0) errors = frame_errors(out, b, 0);
        forces.select(1, m).copy_(out.force[0]);
        virials[m].copy_(out.virial[0]);
        energies[m].copy_(out.energy[0] / static_cast<double>(n));
      }
      const bool labelled_virial = options.real_error && frame.has_virial();
      const double* force_ref = options.real_error ? frame.force.data() : nullptr;
      const double* virial_ref = labelled_virial ? frame.virial.data() : nullptr;
      EnsembleFrame row;
      const auto atom_devi = force_deviation(forces.data_ptr<double>(), static_cast<std::size_t>(n),
                                             static_cast<std::size_t>(k), options.relative, force_ref);
      DeviationExtremes extremes;
      extremes.add(atom_devi);
      std::array<double, 9> virial_devi{};  // a real error without virial labels: 0
      if (!options.real_error || labelled_virial) {
        virial_devi = virial_deviation(virials.data_ptr<double>(), static_cast<std::size_t>(k),
                                       static_cast<double>(n), options.relative_v, virial_ref);
      }
      row.deviation = deviation_row(extremes, virial_devi);
      if (options.real_error) {
        // sqrt((1/K) sum_k (e_k - e_ref)^2), per atom
        const double e_ref = frame.energy[0] / static_cast<double>(n);
        row.devi_e = std::sqrt((energies - e_ref).square().mean().item<double>());
      } else {
        // sqrt((1/K) sum_k (e_k - <e>)^2), the population deviation as numpy's std
        row.devi_e = energies.std(/*unbiased=*/false).item<double>();
      }
      row.errors = errors;
      if (options.atomic) row.atom_devi = atom_devi;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace deepkf
