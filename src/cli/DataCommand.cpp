// deepkf data summary PATH...: frames, atoms, species, energy and force statistics, virial presence and
// neighbour counts (with the "auto" sel they imply) per system and in total.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "src/cli/Commands.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/SystemStatistics.hpp"
#include "src/geometry/NeighborList.hpp"

namespace deepkf::cli {

namespace {

struct SummaryOptions {
  std::vector<std::string> paths;
  std::vector<std::string> type_map;
  double rcut = 6.0;
  std::int64_t max_frames = 200;
  bool allow_suspicious_units = false;
};

std::string species_text(const System& s, const SystemStatistics& st) {
  std::string out;
  for (std::size_t t = 0; t < s.type_map.size(); ++t)
    if (st.species_count[t] > 0)
      out += fmt::format("{}{}{}", out.empty() ? "" : " ", s.type_map[t], st.species_count[t]);
  return out;
}

// The totals row of the summary, summed over the systems' rows.
struct SummaryTotals {
  std::int64_t frames = 0, atoms_max = 0, force_frames = 0, sampled = 0;
  double sum = 0.0, fsum_sq = 0.0, fcomp = 0.0, fmax = 0.0;
  double emin = INFINITY, emax = -INFINITY;
  bool any_virial = false, all_virial = true, strided = false;
  std::vector<std::int64_t> max_count;  // per type of the type map, sized by the caller

  void add(const System& s, const SystemStatistics& st, const NeighborCensus& c) {
    frames += s.nframes;
    atoms_max = std::max(atoms_max, s.natoms);
    sum += st.energy_mean * static_cast<double>(s.nframes);
    emin = std::min(emin, st.energy_min);
    emax = std::max(emax, st.energy_max);
    fsum_sq += st.force_sum_sq;
    fcomp += 3.0 * static_cast<double>(st.natoms * st.force_frames);
    force_frames += st.force_frames;
    fmax = std::max(fmax, st.force_max);
    any_virial = any_virial || st.has_virial;
    all_virial = all_virial && st.has_virial;
    strided = strided || c.stride > 1;
    sampled += c.frames_used;
    for (std::size_t t = 0; t < max_count.size(); ++t) max_count[t] = std::max(max_count[t], c.max_count[t]);
  }
};

// The totals row: mean E/atom over all frames and the population std about it, force rms, extremes.
void print_totals(const Dataset& d, const SummaryTotals& t, std::size_t wname, std::size_t wspec) {
  const double mean = t.sum / static_cast<double>(std::max<std::int64_t>(t.frames, 1));
  double sum_sq_dev = 0.0;
  for (const System& s : d.systems)
    for (double e : s.energy) {
      const double ea = e / static_cast<double>(s.natoms);
      sum_sq_dev += (ea - mean) * (ea - mean);
    }
  const double std_total = std::sqrt(sum_sq_dev / static_cast<double>(std::max<std::int64_t>(t.frames, 1)));
  const double frms = t.fcomp > 0.0 ? std::sqrt(t.fsum_sq / t.fcomp) : 0.0;
  const std::string total_name = fmt::format("total ({} systems)", d.systems.size());
  fmt::print(
      "{:<{}}  {:>7} {:>6}  {:<{}}  {:>14.6f} {:>10.6f} {:>14.6f} {:>14.6f}  {:>9.4f} {:>9.4f}  {:>6}  {}\n",
      total_name, wname, t.frames, fmt::format("<={}", t.atoms_max), "", wspec, mean, std_total, t.emin,
      t.emax, frms, t.fmax,
      t.all_virial   ? "yes"
      : t.any_virial ? "some"
                     : "no",
      fmt::join(t.max_count, " "));
}

void print_summary(const SummaryOptions& o) {
  if (!(o.rcut > 0.0)) throw ConfigError(fmt::format("--rcut must be positive, got {}", o.rcut));
  if (o.max_frames < 1)
    throw ConfigError(fmt::format("--max-frames must be at least 1, got {}", o.max_frames));
  LoadOptions lo;
  lo.allow_suspicious_units = o.allow_suspicious_units;
  const Dataset d = Dataset::load(o.paths, o.type_map, lo);
  const int ntypes = static_cast<int>(d.type_map.size());

  std::vector<SystemStatistics> stats;
  std::vector<NeighborCensus> census;
  for (const System& s : d.systems) {
    stats.push_back(compute_statistics(s));
    census.push_back(neighbor_census(s, ntypes, o.rcut, o.max_frames));
  }

  std::size_t wname = 6, wspec = 7;
  for (std::size_t i = 0; i < d.systems.size(); ++i) {
    wname = std::max(wname, d.systems[i].source.size());
    wspec = std::max(wspec, species_text(d.systems[i], stats[i]).size());
  }
  const std::string nbr_head = fmt::format("max nbrs ({})", fmt::join(d.type_map, " "));
  fmt::print("type map: {}    rcut: {} A\n\n", fmt::join(d.type_map, " "), o.rcut);
  fmt::print("{:<{}}  {:>7} {:>6}  {:<{}}  {:>14} {:>10} {:>14} {:>14}  {:>9} {:>9}  {:>6}  {}\n", "system",
             wname, "frames", "atoms", "species", wspec, "E/atom mean", "std", "min", "max", "F rms",
             "max |F|", "virial", nbr_head);
  fmt::print("{:<{}}  {:>7} {:>6}  {:<{}}  {:>14} {:>10} {:>14} {:>14}  {:>9} {:>9}  {:>6}\n", "", wname, "",
             "", "", wspec, "(eV)", "(eV)", "(eV)", "(eV)", "(eV/A)", "(eV/A)", "");

  SummaryTotals totals;
  totals.max_count.assign(static_cast<std::size_t>(ntypes), 0);
  for (std::size_t i = 0; i < d.systems.size(); ++i) {
    const System& s = d.systems[i];
    const SystemStatistics& st = stats[i];
    const NeighborCensus& c = census[i];
    fmt::print(
        "{:<{}}  {:>7} {:>6}  {:<{}}  {:>14.6f} {:>10.6f} {:>14.6f} {:>14.6f}  {:>9.4f} {:>9.4f}  {:>6}  "
        "{}{}\n",
        s.source, wname, s.nframes, s.natoms, species_text(s, st), wspec, st.energy_mean, st.energy_std,
        st.energy_min, st.energy_max, st.force_rms(), st.force_max, st.has_virial ? "yes" : "no",
        fmt::join(c.max_count, " "), c.stride > 1 ? fmt::format(" (frame stride {})", c.stride) : "");
    totals.add(s, st, c);
  }
  print_totals(d, totals, wname, wspec);

  fmt::print("\nforce rms over {} frames with non-zero forces; std is the population standard deviation.\n",
             totals.force_frames);
  fmt::print("neighbour counts within {} A from {} of {} frames{}.\n", o.rcut, totals.sampled, totals.frames,
             totals.strided
                 ? fmt::format(" (systems over {} frames sampled with a stride: use --max-frames to change)",
                               o.max_frames)
                 : " (all frames)");
  fmt::print("auto sel ({}): {}\n", fmt::join(d.type_map, " "), fmt::join(auto_sel(totals.max_count), " "));
  for (const auto& w : d.warnings) fmt::print("warning: {}\n", w);
  // Last: every frame in the files was read (a plain count of the stored frames, independent of the readers).
  std::int64_t found = 0;
  for (const auto& p : o.paths) found += count_frames_found(p);
  fmt::print("frames read: {} of {} found in the files{}\n", totals.frames, found,
             totals.frames == found ? "" : fmt::format(" ({} not read)", found - totals.frames));
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Inspect datasets");
  data->require_subcommand(1);
  auto* summary =
      data->add_subcommand("summary", "Frames, species, energy/force statistics and neighbour counts");
  auto o = std::make_shared<SummaryOptions>();
  summary
      ->add_option(
          "PATH", o->paths,
          "system folders, folders of systems, .h5/.hdf5 files (file.h5#group) or .xyz/.extxyz files")
      ->required();
  summary->add_option("--rcut", o->rcut, "cutoff radius for the neighbour counts (A)")->capture_default_str();
  summary
      ->add_option("--type-map", o->type_map, "global element order, e.g. O,H (default: order of appearance)")
      ->delimiter(',');
  summary
      ->add_option("--max-frames", o->max_frames, "neighbour counts from at most this many frames per system")
      ->capture_default_str();
  summary->add_flag("--allow-suspicious-units", o->allow_suspicious_units,
                    "load data whose force/energy units look wrong (prints a warning instead of failing)");
  summary->callback([o] { print_summary(*o); });
}

}  // namespace deepkf::cli
