#include "src/data/FrameSource.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)

#include <algorithm>
#include <numeric>

#include "src/core/Error.hpp"
#include "src/geometry/NeighborList.hpp"

namespace deepkf {

namespace {

void copy_rows(const std::vector<double>& from, std::vector<double>& to,
               const std::vector<std::int64_t>& frames, std::size_t per_frame) {
  if (from.empty()) return;
  to.reserve(frames.size() * per_frame);
  for (auto f : frames)
    to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(f) * per_frame),
              from.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(f) + 1) * per_frame));
}

std::vector<std::int64_t> iota(std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(std::max<std::int64_t>(0, end - begin)));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

SystemInfo info_of(const System& s) {
  SystemInfo info;
  static_cast<SystemAtoms&>(info) = s;
  info.has_force = s.has_force();
  info.has_virial = s.has_virial();
  return info;
}

// A System for `frames` of the system `info` describes, its frame arrays still empty. Throws DataError for
// an index out of range.
System empty_frames(const SystemInfo& info, const std::vector<std::int64_t>& frames) {
  for (auto f : frames)
    if (f < 0 || f >= info.nframes)
      throw DataError(fmt::format("frame {} out of range for {} ({} frames)", f, info.source, info.nframes));
  System s;
  static_cast<SystemAtoms&>(s) = info;
  s.nframes = static_cast<std::int64_t>(frames.size());
  return s;
}

// Throws DataError naming the system, the frame and the two atoms when a frame of `s` has atoms closer than
// kMinAtomDistance (periodic images included); `frames` are the frames' indices in the source.
void check_atom_distances(const System& s, const std::vector<std::int64_t>& frames) {
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const auto f = static_cast<std::int64_t>(k);
    CloseContact c;
    try {
      c = find_close_contact(s.coord.data() + f * 3 * s.natoms, s.natoms,
                             s.periodic ? s.box.data() + 9 * f : nullptr, kMinAtomDistance);
    } catch (const DataError& e) {
      throw DataError(fmt::format("{} frame {}: {}", s.source, frames[k], e.what()));
    }
    if (!c.found) continue;
    const bool image = c.shift[0] != 0.0 || c.shift[1] != 0.0 || c.shift[2] != 0.0;
    const std::string pair = c.j == c.i ? fmt::format("atom {} and its own periodic image", c.i)
                             : image ? fmt::format("atoms {} and {} (a periodic image of {})", c.i, c.j, c.j)
                                     : fmt::format("atoms {} and {}", c.i, c.j);
    throw DataError(
        fmt::format("{} frame {}: {} are {:.4g} A apart, closer than {} A; the frame's "
                    "coordinates (or its cell) are wrong",
                    s.source, frames[k], pair, c.distance, kMinAtomDistance));
  }
}

}  // namespace

System FrameSource::read(const std::vector<std::int64_t>& frames) const {
  System s = empty_frames(info_, frames);
  if (!frames.empty()) fill(frames, s);
  check_atom_distances(s, frames);
  frames_read_ += s.nframes;
  return s;
}

System FrameSource::read_range(std::int64_t begin, std::int64_t end) const { return read(iota(begin, end)); }

void FrameSource::remap_types(const std::vector<std::string>& type_map) {
  remap_atom_types(info_.atom_types, info_.type_map, type_map, info_.source);
  info_.type_map = type_map;
}

MemoryFrameSource::MemoryFrameSource(System system)
    : FrameSource(info_of(system)), system_(std::move(system)) {}

void MemoryFrameSource::fill(const std::vector<std::int64_t>& frames, System& out) const {
  System picked = select_frames(system_, frames);  // the frame arrays; types stay those of info()
  out.coord = std::move(picked.coord);
  out.box = std::move(picked.box);
  out.energy = std::move(picked.energy);
  out.force = std::move(picked.force);
  out.virial = std::move(picked.virial);
}

System select_frames(const System& system, const std::vector<std::int64_t>& frames) {
  System out = empty_frames(info_of(system), frames);
  const auto per_atom3 = static_cast<std::size_t>(3 * system.natoms);
  copy_rows(system.coord, out.coord, frames, per_atom3);
  copy_rows(system.box, out.box, frames, 9);
  copy_rows(system.energy, out.energy, frames, 1);
  copy_rows(system.force, out.force, frames, per_atom3);
  copy_rows(system.virial, out.virial, frames, 9);
  return out;
}

std::string unnamed_type(std::size_t t) { return "Type_" + std::to_string(t); }

namespace {

// Each element with its count, in order of first appearance: "H2O1".
std::string formula(const std::vector<std::string>& species) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& name : species) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  std::string f;
  for (const auto& [name, n] : counts) f += name + std::to_string(n);
  return f;
}

}  // namespace

std::vector<std::string> system_names(const std::string& path,
                                      const std::vector<std::vector<std::string>>& species,
                                      const std::vector<bool>& periodic) {
  std::vector<std::string> formulas;
  for (const auto& s : species) formulas.push_back(formula(s));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < formulas.size(); ++i) {
    std::string name = formulas[i];
    if (std::count(formulas.begin(), formulas.end(), name) > 1)
      name += (periodic[i] ? "" : "_nopbc") + (i > 0 ? "_" + std::to_string(i) : std::string());
    names.push_back(path + ":" + name);
  }
  return names;
}

namespace {

// The names of a system without type_map.raw (unnamed_type).
bool placeholder_names(const std::vector<std::string>& names) {
  for (std::size_t t = 0; t < names.size(); ++t)
    if (names[t] != unnamed_type(t)) return false;
  return !names.empty();
}

}  // namespace

void remap_atom_types(std::vector<int>& atom_types, const std::vector<std::string>& from,
                      const std::vector<std::string>& to, const std::string& source) {
  // Types without names index the target type map, as DeePMD-kit reads such a system.
  if (placeholder_names(from) && !placeholder_names(to)) {
    for (const int t : atom_types) {
      if (t >= static_cast<int>(to.size()))
        throw DataError(
            fmt::format("{} has atom type {} and no type_map.raw, so its types index the type map "
                        "({}), which has {} elements",
                        source, t, fmt::join(to, ", "), to.size()));
    }
    return;
  }
  std::vector<int> index(from.size(), -1);
  for (std::size_t t = 0; t < from.size(); ++t) {
    const auto it = std::find(to.begin(), to.end(), from[t]);
    if (it != to.end()) index[t] = static_cast<int>(it - to.begin());
  }
  for (int& t : atom_types) {
    const int g = index[static_cast<std::size_t>(t)];
    if (g < 0)
      throw DataError(fmt::format("element '{}' of {} is not in the type map ({})",
                                  from[static_cast<std::size_t>(t)], source, fmt::join(to, ", ")));
    t = g;
  }
}

System FrameSubset::read(const std::vector<std::int64_t>& positions) const {
  std::vector<std::int64_t> picked;
  picked.reserve(positions.size());
  for (auto p : positions) {
    if (p < 0 || p >= nframes())
      throw DataError(
          fmt::format("frame {} out of range for a part of {} ({} frames)", p, info().source, nframes()));
    picked.push_back(frames[static_cast<std::size_t>(p)]);
  }
  return source->read(picked);
}

System FrameSubset::read_range(std::int64_t begin, std::int64_t end) const { return read(iota(begin, end)); }

std::vector<FrameSubset> whole(const std::vector<std::shared_ptr<FrameSource>>& sources) {
  std::vector<FrameSubset> out;
  out.reserve(sources.size());
  for (const auto& s : sources) out.push_back(FrameSubset{s, iota(0, s->nframes())});
  return out;
}

}  // namespace deepkf
