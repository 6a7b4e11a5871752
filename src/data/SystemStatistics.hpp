#pragma once
// Whole-system label statistics (energies per atom, forces) and the plausibility check of their units.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

struct SystemStatistics {
  std::string source;  // the system, for messages
  std::int64_t nframes = 0;
  std::int64_t natoms = 0;
  std::vector<std::int64_t> species_count;  // atoms per entry of the system's type_map
  // Energy per atom E / natoms over frames (eV/atom); std is the population standard deviation.
  double energy_mean = 0.0, energy_std = 0.0, energy_min = 0.0, energy_max = 0.0;
  double energy_sq_dev = 0.0;  // sum over frames of (E/natoms - mean)^2 (eV^2/atom^2), for pooling
  // Forces over the frames that have any non-zero component (all-zero frames are placeholders or exact
  // equilibria and say nothing about units).
  std::int64_t force_frames = 0;
  double force_sum_sq = 0.0;  // sum of F_ik^2 over those frames (eV^2/A^2)
  double force_max = 0.0;     // largest |F_i| over all atoms and frames (eV/A)
  bool has_force = false;
  bool has_virial = false;

  // sqrt(force_sum_sq / (3 natoms force_frames)) (eV/A), 0 without such frames.
  double force_rms() const;
};

SystemStatistics compute_statistics(const System& system);

// The statistics of the union of two disjoint frame sets of one system (energy mean and spread pooled by
// Chan's formula), so parts computed separately (chunks, ranks) combine to the whole.
SystemStatistics merge(const SystemStatistics& a, const SystemStatistics& b);

// The frame-dependent fields as numbers (kStatisticsFields of them) and back, for sending between ranks;
// unpack keeps `into`'s source, natoms, species_count and flags.
constexpr std::size_t kStatisticsFields = 8;
std::vector<double> pack(const SystemStatistics& st);
SystemStatistics unpack(const double* values, SystemStatistics into);

// Per neighbour type, the most neighbours within rcut of any atom over the frames examined: every
// frame when nframes <= max_frames, else every stride-th frame (stride = ceil(nframes / max_frames)).
struct NeighborCensus {
  std::vector<std::int64_t> max_count;  // ntypes
  std::int64_t frames_used = 0;
  std::int64_t stride = 1;
};

// system.atom_types must lie in [0, ntypes) (a Dataset's systems share one map); rcut in A.
NeighborCensus neighbor_census(const System& system, int ntypes, double rcut, std::int64_t max_frames = 200);

// Thresholds of check_units, calibrated on the shared DFT datasets (water, si_mlearn, cho_nopbc,
// cu_pwmat: pooled force RMS 0.43 to 4.6 eV/A, energy-spread length at most 0.34 A) and on the same data
// with forces divided by 51.42 (Hartree/Bohr): pooled force RMS 0.008 to 0.09 eV/A, length 3.1 to 17 A.
struct UnitLimits {
  double min_force_rms = 0.03;             // eV/A: below, forces look like Hartree/Bohr (51.42 times smaller)
  std::int64_t min_frames_force_rms = 10;  // fewer frames with forces than this: too little to judge
  double max_force_rms = 100.0;            // eV/A, per system: above, forces look like kcal/mol/A or worse
  double max_energy_force_length = 3.0;    // A: sigma(E/natoms) / force RMS above this means forces too
                                           // small for the energy spread (forces in Ha/Bohr, energies in eV)
};

// Judges the units of a whole load (statistics pooled over all systems, so near-equilibrium systems with
// tiny forces are judged together with the rest). Returns "" when plausible, else one line naming
// `what` (the inputs) or the system, the observed values and the fix.
std::string check_units(const std::vector<SystemStatistics>& stats, const std::string& what,
                        const UnitLimits& limits = {});

}  // namespace deepkf
