#include "src/data/SystemStatistics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/geometry/NeighborList.hpp"

namespace deepkf {

double SystemStatistics::force_rms() const {
  if (force_frames == 0 || natoms == 0) return 0.0;
  return std::sqrt(force_sum_sq / static_cast<double>(3 * natoms * force_frames));
}

SystemStatistics compute_statistics(const System& s) {
  SystemStatistics st;
  st.source = s.source;
  st.nframes = s.nframes;
  st.natoms = s.natoms;
  st.species_count.assign(s.type_map.size(), 0);
  for (int t : s.atom_types) ++st.species_count[static_cast<std::size_t>(t)];
  st.has_force = s.has_force();
  st.has_virial = s.has_virial();
  if (s.nframes == 0 || s.natoms == 0) return st;

  const double inv_n = 1.0 / static_cast<double>(s.natoms);
  double sum = 0.0;
  st.energy_min = st.energy_max = s.energy[0] * inv_n;
  for (double e : s.energy) {
    const double ea = e * inv_n;
    sum += ea;
    st.energy_min = std::min(st.energy_min, ea);
    st.energy_max = std::max(st.energy_max, ea);
  }
  st.energy_mean = sum / static_cast<double>(s.nframes);
  for (double e : s.energy) st.energy_sq_dev += (e * inv_n - st.energy_mean) * (e * inv_n - st.energy_mean);
  // std = sqrt(sum (e - mean)^2 / nframes)
  st.energy_std = std::sqrt(st.energy_sq_dev / static_cast<double>(s.nframes));

  if (s.has_force()) {
    const std::size_t per_frame = static_cast<std::size_t>(3 * s.natoms);
    for (std::int64_t f = 0; f < s.nframes; ++f) {
      const double* F = s.force.data() + static_cast<std::size_t>(f) * per_frame;
      double ss = 0.0;
      for (std::size_t i = 0; i < per_frame; i += 3) {
        const double sq = F[i] * F[i] + F[i + 1] * F[i + 1] + F[i + 2] * F[i + 2];
        ss += sq;
        st.force_max = std::max(st.force_max, std::sqrt(sq));
      }
      if (ss > 0.0) {
        ++st.force_frames;
        st.force_sum_sq += ss;
      }
    }
  }
  return st;
}

SystemStatistics merge(const SystemStatistics& a, const SystemStatistics& b) {
  if (b.nframes == 0) return a;
  if (a.nframes == 0) {
    SystemStatistics out = b;
    out.has_force = a.has_force || b.has_force;
    out.has_virial = a.has_virial || b.has_virial;
    return out;
  }
  SystemStatistics out = a;
  const auto na = static_cast<double>(a.nframes), nb = static_cast<double>(b.nframes);
  const double n = na + nb;
  // Chan et al.: mean = m_a + d n_b / n, M2 = M2_a + M2_b + d^2 n_a n_b / n with d = m_b - m_a
  const double d = b.energy_mean - a.energy_mean;
  out.nframes = a.nframes + b.nframes;
  out.energy_mean = a.energy_mean + d * nb / n;
  out.energy_sq_dev = a.energy_sq_dev + b.energy_sq_dev + d * d * na * nb / n;
  out.energy_std = std::sqrt(out.energy_sq_dev / n);
  out.energy_min = std::min(a.energy_min, b.energy_min);
  out.energy_max = std::max(a.energy_max, b.energy_max);
  out.force_frames = a.force_frames + b.force_frames;
  out.force_sum_sq = a.force_sum_sq + b.force_sum_sq;
  out.force_max = std::max(a.force_max, b.force_max);
  out.has_force = a.has_force || b.has_force;
  out.has_virial = a.has_virial || b.has_virial;
  return out;
}

std::vector<double> pack(const SystemStatistics& st) {
  return {
      static_cast<double>(st.nframes),      st.energy_mean,  st.energy_sq_dev, st.energy_min, st.energy_max,
      static_cast<double>(st.force_frames), st.force_sum_sq, st.force_max};
}

SystemStatistics unpack(const double* v, SystemStatistics into) {
  into.nframes = static_cast<std::int64_t>(v[0]);
  into.energy_mean = v[1];
  into.energy_sq_dev = v[2];
  into.energy_min = v[3];
  into.energy_max = v[4];
  into.force_frames = static_cast<std::int64_t>(v[5]);
  into.force_sum_sq = v[6];
  into.force_max = v[7];
  into.energy_std =
      into.nframes > 0 ? std::sqrt(into.energy_sq_dev / static_cast<double>(into.nframes)) : 0.0;
  return into;
}

NeighborCensus neighbor_census(const System& s, int ntypes, double rcut, std::int64_t max_frames) {
  NeighborCensus c;
  c.max_count.assign(static_cast<std::size_t>(ntypes), 0);
  if (s.nframes == 0) return c;
  c.stride = std::max<std::int64_t>(1, (s.nframes + max_frames - 1) / std::max<std::int64_t>(max_frames, 1));
  const auto per_frame = static_cast<std::size_t>(3 * s.natoms);
  for (std::int64_t f = 0; f < s.nframes; f += c.stride) {
    const double* box = s.periodic ? s.box.data() + 9 * f : nullptr;
    const auto counts = max_neighbor_counts(s.coord.data() + static_cast<std::size_t>(f) * per_frame,
                                            s.natoms, s.atom_types.data(), ntypes, box, rcut);
    for (std::size_t t = 0; t < c.max_count.size(); ++t) c.max_count[t] = std::max(c.max_count[t], counts[t]);
    ++c.frames_used;
  }
  return c;
}

std::string check_units(const std::vector<SystemStatistics>& stats, const std::string& what,
                        const UnitLimits& limits) {
  double sum_sq = 0.0, components = 0.0, sq_dev = 0.0, dof = 0.0;
  std::int64_t frames = 0;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const SystemStatistics& st = stats[i];
    if (st.force_rms() > limits.max_force_rms)
      return fmt::format(
          "forces in {} look like the wrong unit: force rms {:.4g} eV/A over {} frames (max |F| {:.4g}) is "
          "above "
          "{} eV/A, which no DFT dataset in eV/A reaches (kcal/mol/A?); convert forces to eV/A",
          st.source, st.force_rms(), st.force_frames, st.force_max, limits.max_force_rms);
    sum_sq += st.force_sum_sq;
    components += 3.0 * static_cast<double>(st.natoms * st.force_frames);
    frames += st.force_frames;
    sq_dev += st.energy_sq_dev;
    dof += static_cast<double>(std::max<std::int64_t>(st.nframes - 1, 0));
  }
  if (components == 0.0) return "";
  // F_rms = sqrt(sum F^2 / ncomponents), pooled over systems
  const double rms = std::sqrt(sum_sq / components);
  // A handful of near-equilibrium frames in eV/A can look like either finding (si_mlearn's sys_Si16, 2
  // frames: force rms 0.009 eV/A, energy/force ratio 4 A), so loads with fewer frames are not judged.
  if (frames < limits.min_frames_force_rms) return "";
  if (rms < limits.min_force_rms)
    return fmt::format(
        "forces in {} look like Hartree/Bohr, not eV/A: force rms {:.4g} eV/A over {} frames is below {} "
        "eV/A "
        "(DFT data in eV/A has 0.4 to 5); multiply forces by 51.422 to get eV/A (and energies in Hartree by "
        "27.211 to get eV), or set allow_suspicious_units (--allow-suspicious-units) to load them as they "
        "are",
        what, rms, frames, limits.min_force_rms);
  if (dof > 0.0) {
    // sigma = sqrt(sum_s sum_f (e - mean_s)^2 / sum_s (nframes_s - 1)), L = sigma / F_rms
    const double sigma = std::sqrt(sq_dev / dof);
    const double length = sigma / rms;
    if (length > limits.max_energy_force_length)
      return fmt::format(
          "forces in {} look too small for their energies: energy per atom spreads by {:.4g} eV (std within "
          "systems) while force rms is only {:.4g} eV/A, a ratio of {:.3g} A (DFT data in eV and eV/A stays "
          "below {} A); forces in Hartree/Bohr? multiply them by 51.422 to get eV/A, or set "
          "allow_suspicious_units (--allow-suspicious-units) to load them as they are",
          what, sigma, rms, length, limits.max_energy_force_length);
  }
  return "";
}

}  // namespace deepkf
