// deepkf neighbor-stat -s DATA... -r RCUT [-t O H ...] [--one-type]: the closest distance between two atoms
// (periodic images included) and the most neighbours of each element within rcut of any atom, over every
// frame, in `dp neighbor-stat`'s words (min_nbor_dist, max_nbor_size), to choose sel and see how close the
// data's atoms come. `deepkf data summary` gives the counts beside the rest of a data set's statistics.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "src/cli/Commands.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/geometry/NeighborList.hpp"

namespace deepkf::cli {
namespace {

struct NeighborStatArgs {
  std::vector<std::string> systems{"."};
  double rcut = 6.0;
  std::vector<std::string> type_map;
  bool one_type = false;
};

void run_neighbor_stat(const NeighborStatArgs& args) {
  if (!(args.rcut > 0.0))
    throw ConfigError(fmt::format("deepkf neighbor-stat: -r must be positive, got {}", args.rcut));
  LoadOptions lo;
  lo.allow_suspicious_units = true;  // only positions matter here
  const Dataset d = Dataset::load(args.systems, args.type_map, lo);
  const int ntypes = args.one_type ? 1 : static_cast<int>(d.type_map.size());
  // One slot per element: the slots hold each element's nearest neighbour (NeighborList orders them by
  // distance), and max_count counts every neighbour before the slots truncate them.
  const std::vector<int> sel(static_cast<std::size_t>(ntypes), 1);
  std::vector<std::int64_t> max_count(static_cast<std::size_t>(ntypes), 0);
  double closest = std::numeric_limits<double>::infinity();
  std::int64_t frames = 0;
  for (const System& s : d.systems) {
    const std::vector<int> types = args.one_type ? std::vector<int>(s.atom_types.size(), 0) : s.atom_types;
    const auto per_frame = static_cast<std::size_t>(3 * s.natoms);
    for (std::int64_t f = 0; f < s.nframes; ++f, ++frames) {
      const double* x = s.coord.data() + static_cast<std::size_t>(f) * per_frame;
      const double* box = s.periodic ? s.box.data() + 9 * f : nullptr;
      const NeighborList nl = build_neighbor_list(x, s.natoms, types.data(), box, args.rcut, sel);
      for (std::size_t t = 0; t < max_count.size(); ++t)
        max_count[t] = std::max(max_count[t], nl.max_count[t]);
      for (std::int64_t i = 0; i < nl.nloc; ++i) {
        for (std::int64_t k = 0; k < nl.nnei; ++k) {
          const auto slot = static_cast<std::size_t>(i * nl.nnei + k);
          const auto j = nl.index[slot];
          if (j < 0) continue;
          double r2 = 0.0;
          for (int c = 0; c < 3; ++c) {
            const double r = x[3 * j + c] + nl.shift[3 * slot + static_cast<std::size_t>(c)] - x[3 * i + c];
            r2 += r * r;
          }
          closest = std::min(closest, std::sqrt(r2));
        }
      }
    }
  }
  fmt::print(
      "systems: {}, frames: {}, rcut: {} A, type map: {}\n", d.systems.size(), frames, args.rcut,
      args.one_type ? std::string("(all elements as one)") : fmt::format("{}", fmt::join(d.type_map, " ")));
  if (std::isfinite(closest)) {
    fmt::print("min_nbor_dist: {:.6f}\n", closest);
  } else {
    fmt::print("min_nbor_dist: none (no two atoms within {} A)\n", args.rcut);
  }
  fmt::print("max_nbor_size: [{}]\n", fmt::join(max_count, " "));
}

}  // namespace

void add_neighbor_stat_command(CLI::App& app) {
  auto args = std::make_shared<NeighborStatArgs>();
  auto* cmd = app.add_subcommand(
      "neighbor-stat", "Closest atoms and most neighbours within rcut over all frames (dp neighbor-stat)");
  cmd->add_option("-s,--system", args->systems,
                  "npy folders, folders of systems, file.h5, file.h5#group, extended XYZ")
      ->capture_default_str();
  cmd->add_option("-r,--rcut", args->rcut, "cutoff radius (A)")->capture_default_str();
  cmd->add_option("-t,--type-map", args->type_map, "element order (default: as the data give it)");
  cmd->add_flag("--one-type,--mixed-type", args->one_type, "count neighbours of all elements together");
  cmd->callback([args] { run_neighbor_stat(*args); });
}

}  // namespace deepkf::cli
