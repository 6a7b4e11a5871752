#include "src/uncertainty/EnsembleDeviation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// sqrt((1/K) sum_k (e_k - ref)^2); ref the mean of e (the population deviation, as numpy's std) or a label.
double energy_deviation(const std::vector<double>& e, const double* ref) {
  const double k = static_cast<double>(e.size());
  const double centre = ref ? *ref : std::accumulate(e.begin(), e.end(), 0.0) / k;
  double sq = 0.0;
  for (double v : e) sq += (v - centre) * (v - centre);
  return std::sqrt(sq / k);
}

}  // namespace

std::vector<EnsembleFrame> ensemble_deviation(const Ensemble& models, const std::vector<FrameSubset>& sets,
                                              const DeviationOptions& options) {
  std::vector<EnsembleFrame> rows;
  const auto k = models.size();
  const PotentialOptions evaluation;
  for (const auto& set : sets) {
    if (options.real_error && (set.info().nframes > 0) && !set.info().has_force) {
      throw DataError(fmt::format("{} has no forces: a real error needs labelled frames", set.info().source));
    }
    const auto n = static_cast<std::size_t>(set.info().natoms);
    const double natoms = static_cast<double>(n);
    // Frames read and evaluated together, as many as one evaluation takes.
    const std::int64_t chunk = evaluation.frames_per_group(set.info().natoms);
    for (std::int64_t begin = 0; begin < set.nframes(); begin += chunk) {
      const auto end = std::min(set.nframes(), begin + chunk);
      std::vector<std::int64_t> positions(static_cast<std::size_t>(end - begin));
      std::iota(positions.begin(), positions.end(), begin);
      const System frames = set.read(positions);
      if (options.real_error && frames.energy.empty())
        throw DataError(
            fmt::format("{} has no energies: a real error needs labelled frames", set.info().source));
      std::vector<std::int64_t> ids(positions.size()), numbers(positions.size());
      std::iota(ids.begin(), ids.end(), std::int64_t{0});
      for (std::size_t j = 0; j < positions.size(); ++j)
        numbers[j] = set.frames[static_cast<std::size_t>(positions[j])];
      const auto out = models.evaluate(frames, ids, evaluation, numbers);
      for (std::size_t j = 0; j < ids.size(); ++j) {
        // forces: natoms x K x 3 (atom-major, as force_deviation reads them); virials: K x 9
        std::vector<double> forces(n * k * 3), virials(k * 9), energies(k);
        for (std::size_t m = 0; m < k; ++m) {
          for (std::size_t i = 0; i < n; ++i)
            std::copy_n(out[m].force.data() + (j * n + i) * 3, 3, forces.data() + (i * k + m) * 3);
          std::copy_n(out[m].virial.data() + j * 9, 9, virials.data() + m * 9);
          energies[m] = out[m].energy[j] / natoms;
        }
        const bool labelled_virial = options.real_error && frames.has_virial();
        const double* force_ref = options.real_error ? frames.force.data() + j * n * 3 : nullptr;
        const double* virial_ref = labelled_virial ? frames.virial.data() + j * 9 : nullptr;
        EnsembleFrame row;
        const auto atom_devi = force_deviation(forces.data(), n, k, options.relative, force_ref);
        DeviationExtremes extremes;
        extremes.add(atom_devi);
        std::array<double, 9> virial_devi{};  // a real error without virial labels: 0
        if (!options.real_error || labelled_virial)
          virial_devi = virial_deviation(virials.data(), k, natoms, options.relative_v, virial_ref);
        row.deviation = deviation_row(extremes, virial_devi);
        const double e_ref = options.real_error ? frames.energy[j] / natoms : 0.0;
        row.devi_e = energy_deviation(energies, options.real_error ? &e_ref : nullptr);
        row.errors = frame_errors(frames, static_cast<std::int64_t>(j), out[0].energy[j],
                                  out[0].force.data() + j * n * 3);
        if (options.atomic) row.atom_devi = atom_devi;
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

}  // namespace deepkf
