#include "src/data/Dataset.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/Error.hpp"
#include "src/data/DataFormat.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdLmdb.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/ExtXyz.hpp"
#include "src/data/NpyFile.hpp"
#include "src/data/SystemStatistics.hpp"

namespace fs = std::filesystem;

namespace deepkf {

namespace {

// The first set.* folder in `dir`, or "" when it has none.
std::string first_set_folder(const fs::path& dir) {
  std::error_code ec;
  std::string first;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("set.", 0) == 0 && e.is_directory(ec) && (first.empty() || name < first)) first = name;
  }
  return first;
}

// A folder with frames (set.*) but no type.raw cannot be read as a system; skipping it would drop its
// frames without a word. A folder without set.* is simply not a system.
void reject_untyped_frames(const fs::path& dir) {
  const std::string set = first_set_folder(dir);
  if (!set.empty())
    throw DataError(
        fmt::format("{} holds frames ({}) but no type.raw, so its atoms have no types; add "
                    "type.raw (and type_map.raw) or move the folder out of the data path",
                    dir.string(), set));
}

}  // namespace

std::vector<std::shared_ptr<FrameSource>> open_systems(const std::string& path) {
  return open_systems(path, data_format(path));
}

std::vector<std::shared_ptr<FrameSource>> open_systems(const std::string& path, DataFormat format) {
  switch (format) {
    case DataFormat::kHdf5:
      return open_hdf5_systems(path);
    case DataFormat::kExtXyz: {
      std::vector<std::shared_ptr<FrameSource>> out;
      for (System& s : read_extxyz(path)) out.push_back(std::make_shared<MemoryFrameSource>(std::move(s)));
      return out;
    }
    case DataFormat::kMissing:
      throw DataError(fmt::format("data path {} does not exist", path));
    case DataFormat::kLmdb:
      return open_lmdb_systems(path);
    case DataFormat::kNpySystem:
      return open_npy_systems(path);
    case DataFormat::kLammpsDump:
    case DataFormat::kOther:
      throw DataError(
          fmt::format("{} is {}, not a system folder, a folder of systems, an .h5/.hdf5 file, an .lmdb "
                      "database nor an .xyz/.extxyz file{}",
                      path, describe(format),
                      format == DataFormat::kLammpsDump
                          ? " (a dump holds no labels; `deepkf uncertainty` and `deepkf model-devi` read it)"
                          : ""));
    case DataFormat::kFolder:
      break;
  }
  reject_untyped_frames(path);
  std::vector<std::string> dirs;  // npy system folders and LMDB databases
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink);
       it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_directory()) continue;
    const std::string dir = it->path().string();
    if (is_npy_system(dir) || is_lmdb_path(dir)) {
      dirs.push_back(dir);
      it.disable_recursion_pending();  // a system's set.* folders are not systems
    } else {
      reject_untyped_frames(it->path());
    }
  }
  if (dirs.empty())
    throw DataError(fmt::format("no system (folder with type.raw, or LMDB database) found under {}", path));
  std::sort(dirs.begin(), dirs.end());
  std::vector<std::shared_ptr<FrameSource>> out;
  out.reserve(dirs.size());
  for (const auto& d : dirs) {
    for (auto& s : is_lmdb_path(d) ? open_lmdb_systems(d) : open_npy_systems(d)) out.push_back(std::move(s));
  }
  return out;
}

std::int64_t count_frames_found(const std::string& path) {
  const DataFormat format = data_format(path);
  if (format == DataFormat::kHdf5) return count_hdf5_frames(path);
  std::error_code ec;
  std::int64_t total = 0;
  if (format == DataFormat::kExtXyz) {
    // Frames as the count lines delimit them: a line holding one integer n, then n + 1 lines.
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      long long n = 0;
      std::string rest;
      if (!(words >> n) || (words >> rest) || n <= 0) continue;
      ++total;
      for (long long skip = 0; skip <= n && std::getline(in, line); ++skip) {
      }
    }
    return total;
  }
  // Folders: the rows of every set.*/coord.npy below the path, the keys of every LMDB database.
  auto add = [&](const fs::path& dir) {
    const fs::path coord = dir / "coord.npy";
    if (dir.filename().string().rfind("set.", 0) == 0 && fs::is_regular_file(coord, ec))
      total += read_npy_header(coord.string()).rows();
    if (fs::is_regular_file(dir / "data.mdb", ec)) total += count_lmdb_frames(dir.string());
  };
  if (!fs::is_directory(path, ec)) return 0;
  add(path);
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink);
       it != fs::recursive_directory_iterator(); ++it)
    if (it->is_directory(ec)) add(it->path());
  return total;
}

std::vector<System> read_systems(const std::string& path) {
  std::vector<System> out;
  for (const auto& source : open_systems(path)) out.push_back(source->read_all());
  return out;
}

void remap_types(System& system, const std::vector<std::string>& type_map) {
  remap_atom_types(system.atom_types, system.type_map, type_map, system.source);
  system.type_map = type_map;
}

OpenedData open_dataset(const std::vector<std::string>& paths, const std::vector<std::string>& type_map,
                        const std::string& type_map_origin) {
  std::vector<DataFormat> formats;
  formats.reserve(paths.size());
  for (const auto& path : paths) formats.push_back(data_format(path));
  return open_dataset(paths, formats, type_map, type_map_origin);
}

OpenedData open_dataset(const std::vector<std::string>& paths, const std::vector<DataFormat>& formats,
                        const std::vector<std::string>& type_map, const std::string& type_map_origin) {
  if (paths.empty()) throw DataError("no data paths given");
  for (auto it = type_map.begin(); it != type_map.end(); ++it)
    if (std::find(type_map.begin(), it, *it) != it)
      throw ConfigError(fmt::format("the type map ({}) names '{}' twice: each element once",
                                    fmt::join(type_map, " "), *it));
  OpenedData d;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    for (auto& s : open_systems(paths[i], formats.at(i))) {
      d.systems.push_back(std::move(s));
      d.path_index.push_back(i);
    }
  }
  d.type_map = type_map;
  if (d.type_map.empty()) {
    for (const auto& source : d.systems) {
      const SystemInfo& s = source->info();
      for (std::size_t t = 0; t < s.type_map.size(); ++t) {
        // only elements that occur: an unused type_map entry does not enter the union
        if (std::find(s.atom_types.begin(), s.atom_types.end(), static_cast<int>(t)) == s.atom_types.end())
          continue;
        if (std::find(d.type_map.begin(), d.type_map.end(), s.type_map[t]) == d.type_map.end())
          d.type_map.push_back(s.type_map[t]);
      }
    }
  }
  for (auto& s : d.systems) {
    try {
      s->remap_types(d.type_map);  // throws only for an element the type map lacks
    } catch (const DataError& e) {
      if (type_map_origin.empty()) throw;
      throw DataError(std::string(e.what()) + ", given by " + type_map_origin);
    }
  }
  return d;
}

std::string describe_paths(const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  return paths.size() == 1 ? paths[0] : fmt::format("{} (and {} more)", paths[0], paths.size() - 1);
}

Dataset Dataset::load(const std::vector<std::string>& paths, const std::vector<std::string>& type_map,
                      const LoadOptions& options) {
  OpenedData opened = open_dataset(paths, type_map);
  Dataset d;
  d.type_map = opened.type_map;
  for (const auto& source : opened.systems) d.systems.push_back(source->read_all());

  std::vector<SystemStatistics> stats;
  stats.reserve(d.systems.size());
  for (const System& s : d.systems) stats.push_back(compute_statistics(s));
  const std::string finding = check_units(stats, describe_paths(paths));
  if (!finding.empty()) {
    if (!options.allow_suspicious_units) throw DataError(finding);
    d.warnings.push_back(finding);
  }
  return d;
}

std::int64_t Dataset::total_frames() const {
  std::int64_t n = 0;
  for (const System& s : systems) n += s.nframes;
  return n;
}

}  // namespace deepkf
