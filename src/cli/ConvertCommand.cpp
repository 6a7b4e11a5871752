// deepkf convert INPUT... -o OUT.h5: npy folders, deepmd/hdf5 files and extended XYZ files into one
// deepmd/hdf5 file, one group per system named after its source, written atomically.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/cli/Commands.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/data/DataFormat.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/SystemStatistics.hpp"

namespace fs = std::filesystem;

namespace deepkf::cli {

namespace {

struct ConvertOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::string> type_map;
  std::int64_t set_size = 5000;
  bool allow_suspicious_units = false;
};

std::string base_name(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// The group name of a system read from `input`: the folder name (plus the path below a folder of
// systems), the group path inside an HDF5 file, or FILE_STEM/FORMULA for extended XYZ. `format`:
// data_format(input).
std::string group_name(const std::string& input, DataFormat format, const System& s) {
  if (format == DataFormat::kHdf5) {
    std::string g = s.source.substr(s.source.find('#') + 1);
    while (!g.empty() && g.front() == '/') g.erase(g.begin());
    return g.empty() ? fs::path(input.substr(0, input.find('#'))).stem().string() : g;
  }
  if (!fs::is_directory(input)) {
    const auto colon = s.source.rfind(':');
    return fs::path(input).stem().string() + "/" + s.source.substr(colon + 1);
  }
  if (format == DataFormat::kNpySystem) return base_name(input);
  return base_name(input) + "/" +
         fs::path(s.source).lexically_relative(fs::path(input).lexically_normal()).string();
}

void convert(const ConvertOptions& o) {
  if (o.set_size < 1) throw ConfigError(fmt::format("--set-size must be at least 1, got {}", o.set_size));
  std::vector<System> systems;
  std::vector<std::string> names;
  std::set<std::string> used;
  for (const auto& input : o.inputs) {
    const DataFormat format = data_format(input);
    for (System& s : read_systems(input)) {
      const std::string base = group_name(input, format, s);
      std::string name = base;
      for (int k = 2; used.count(name); ++k) name = base + "_" + std::to_string(k);
      used.insert(name);
      names.push_back(name);
      systems.push_back(std::move(s));
    }
  }
  // One type map for all groups, as a Dataset would build it.
  std::vector<std::string> type_map = o.type_map;
  if (type_map.empty())
    for (const System& s : systems)
      for (int t : s.atom_types) {
        const auto& name = s.type_map[static_cast<std::size_t>(t)];
        if (std::find(type_map.begin(), type_map.end(), name) == type_map.end()) type_map.push_back(name);
      }
  for (System& s : systems) remap_types(s, type_map);

  std::vector<SystemStatistics> stats;
  for (const System& s : systems) stats.push_back(compute_statistics(s));
  const std::string finding = check_units(stats, fmt::format("{}", fmt::join(o.inputs, ", ")));
  if (!finding.empty() && !o.allow_suspicious_units) throw DataError(finding);
  if (!finding.empty()) fmt::print(stderr, "deepkf: warning: {}\n", finding);

  write_atomically(o.output,
                   [&](const std::string& tmp) { write_hdf5_systems(tmp, systems, names, o.set_size); });
  std::int64_t frames = 0;
  for (const System& s : systems) frames += s.nframes;
  fmt::print("wrote {}: {} systems, {} frames, type map {}\n", o.output, systems.size(), frames,
             fmt::join(type_map, " "));
  for (std::size_t i = 0; i < systems.size(); ++i)
    fmt::print("  {:<32} {:>7} frames  from {}\n", names[i], systems[i].nframes, systems[i].source);
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert", "Convert npy folders, hdf5 and extended XYZ files into one deepmd/hdf5 file");
  auto o = std::make_shared<ConvertOptions>();
  cmd->add_option("INPUT", o->inputs,
                  "system folders, folders of systems, .h5/.hdf5 files (file.h5#group) or .xyz/.extxyz files")
      ->required();
  cmd->add_option("-o,--output", o->output, "output .h5 file (replaced atomically)")->required();
  cmd->add_option("--type-map", o->type_map, "global element order, e.g. O,H (default: order of appearance)")
      ->delimiter(',');
  cmd->add_option("--set-size", o->set_size, "frames per set.NNN group")->capture_default_str();
  cmd->add_flag("--allow-suspicious-units", o->allow_suspicious_units,
                "convert data whose force/energy units look wrong (prints a warning instead of failing)");
  cmd->callback([o] { convert(*o); });
}

}  // namespace deepkf::cli
