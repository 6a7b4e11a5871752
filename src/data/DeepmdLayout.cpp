#include "src/data/DeepmdLayout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {

namespace {

std::int64_t rows_of(const RawArray& a) { return a.shape.empty() ? 1 : a.shape[0]; }

std::int64_t cols_of(const RawArray& a) {
  std::int64_t c = 1;
  for (std::size_t i = 1; i < a.shape.size(); ++i) c *= a.shape[i];
  return c;
}

std::string shape_text(const RawArray& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + (a.shape.size() == 1 ? ",)" : ")");
}

// Frame/atom of the first non-finite value of a (rows x cols) array whose rows hold `per_atom` values per
// atom (3 for coordinates and forces, 0 when the row is not per atom).
void check_finite(const RawArray& a, const char* name, const std::string& where, int per_atom) {
  const auto it = std::find_if(a.data.begin(), a.data.end(), [](double v) { return !std::isfinite(v); });
  if (it == a.data.end()) return;
  const std::int64_t i = it - a.data.begin();
  const std::int64_t cols = std::max<std::int64_t>(cols_of(a), 1);
  const std::int64_t frame = i / cols;
  const std::int64_t col = i % cols;
  if (per_atom > 0)
    throw DataError(fmt::format("{} in {} has a non-finite value ({}) at frame {} atom {} component {}", name,
                                where, *it, frame, col / per_atom, "xyz"[col % per_atom]));
  throw DataError(
      fmt::format("{} in {} has a non-finite value ({}) at frame {} entry {}", name, where, *it, frame, col));
}

// Checks a per-frame array: rows == nframes and columns == cols.
void check_shape(const RawArray& a, const char* name, const std::string& where, std::int64_t nframes,
                 std::int64_t cols, const std::string& cols_meaning) {
  if (rows_of(a) != nframes || a.shape.empty())
    throw DataError(fmt::format("{} in {} has {} rows, coord.npy has {}", name, where,
                                a.shape.empty() ? 0 : rows_of(a), nframes));
  if (cols_of(a) != cols)
    throw DataError(fmt::format("{} in {} has shape {}: {} values per frame, expected {}", name, where,
                                shape_text(a), cols_of(a), cols_meaning));
}

void append(std::vector<double>& to, const RawArray& a) { to.insert(to.end(), a.data.begin(), a.data.end()); }

}  // namespace

System assemble_system(RawSystem raw) {
  const std::string& src = raw.source;
  if (!raw.has_types) throw DataError(fmt::format("{} has no type.raw", src));
  if (raw.types.empty()) throw DataError(fmt::format("type.raw in {} is empty", src));
  const auto max_type = *std::max_element(raw.types.begin(), raw.types.end());
  if (raw.type_map.empty())
    for (std::int64_t t = 0; t <= max_type; ++t) raw.type_map.push_back("Type_" + std::to_string(t));
  const auto ntypes = static_cast<std::int64_t>(raw.type_map.size());
  for (std::size_t i = 0; i < raw.types.size(); ++i) {
    if (raw.types[i] < 0 || raw.types[i] >= ntypes)
      throw DataError(
          fmt::format("type.raw in {} has atom type {} at atom {}, outside type_map.raw ({}: {} types)", src,
                      raw.types[i], i, fmt::join(raw.type_map, " "), ntypes));
  }
  if (raw.sets.empty()) throw DataError(fmt::format("{} has no set.* with frames", src));

  System s;
  s.source = src;
  s.type_map = raw.type_map;
  s.atom_types.assign(raw.types.begin(), raw.types.end());
  s.periodic = raw.periodic;
  s.natoms = static_cast<std::int64_t>(raw.types.size());
  const std::int64_t ncoord = 3 * s.natoms;
  const std::string atoms_text = fmt::format("3 x {} atoms = {}", s.natoms, ncoord);
  const bool with_force = raw.sets.front().force.present;
  const bool with_virial = raw.sets.front().virial.present;

  for (const RawSet& set : raw.sets) {
    const std::string& w = set.where;
    if (!set.coord.present) throw DataError(fmt::format("{} has no coord.npy", w));
    if (!set.energy.present) throw DataError(fmt::format("{} has no energy.npy", w));
    if (s.periodic && !set.box.present)
      throw DataError(fmt::format("{} has no box.npy (required unless the system is marked nopbc)", w));
    if (set.force.present != with_force)
      throw DataError(fmt::format("force.npy is {} in {} but {} in {}", with_force ? "present" : "absent",
                                  raw.sets.front().where, set.force.present ? "present" : "absent", w));
    if (set.virial.present != with_virial)
      throw DataError(fmt::format("virial.npy is {} in {} but {} in {}", with_virial ? "present" : "absent",
                                  raw.sets.front().where, set.virial.present ? "present" : "absent", w));

    if (set.coord.shape.empty()) throw DataError(fmt::format("coord.npy in {} is a 0-d array", w));
    const std::int64_t n = rows_of(set.coord);
    if (cols_of(set.coord) != ncoord)
      throw DataError(fmt::format("coord.npy in {} has shape {}: {} values per frame, expected {}", w,
                                  shape_text(set.coord), cols_of(set.coord), atoms_text));
    // energy: (nframes,) or (nframes, 1)
    check_shape(set.energy, "energy.npy", w, n, 1, "1 energy");
    if (set.force.present) check_shape(set.force, "force.npy", w, n, ncoord, atoms_text);
    if (s.periodic) check_shape(set.box, "box.npy", w, n, 9, "9 (3 x 3 cell)");
    if (set.virial.present) check_shape(set.virial, "virial.npy", w, n, 9, "9 (3 x 3 virial)");

    check_finite(set.coord, "coord.npy", w, 3);
    check_finite(set.energy, "energy.npy", w, 0);
    if (set.force.present) check_finite(set.force, "force.npy", w, 3);
    if (set.virial.present) check_finite(set.virial, "virial.npy", w, 0);
    if (s.periodic) {
      check_finite(set.box, "box.npy", w, 0);
      for (std::int64_t f = 0; f < n; ++f)
        Cell::validate(set.box.data.data() + 9 * f, fmt::format("box.npy in {} frame {}", w, f));
    }
  }

  std::int64_t total = 0;
  for (const RawSet& set : raw.sets) total += rows_of(set.coord);
  s.nframes = total;
  s.coord.reserve(static_cast<std::size_t>(total * ncoord));
  s.energy.reserve(static_cast<std::size_t>(total));
  for (RawSet& set : raw.sets) {
    append(s.coord, set.coord);
    append(s.energy, set.energy);
    if (s.periodic) append(s.box, set.box);
    if (with_force) append(s.force, set.force);
    if (with_virial) append(s.virial, set.virial);
    set = RawSet{};  // release memory as we go
  }
  return s;
}

std::vector<RawSet> split_into_sets(const System& system, std::int64_t set_size) {
  std::vector<RawSet> sets;
  const std::int64_t ncoord = 3 * system.natoms;
  auto slice = [](const std::vector<double>& v, std::int64_t begin, std::int64_t end, std::int64_t cols) {
    RawArray a;
    a.present = true;
    a.shape = {end - begin, cols};
    a.data.assign(v.begin() + begin * cols, v.begin() + end * cols);
    return a;
  };
  for (std::int64_t begin = 0, k = 0; begin < system.nframes; begin += set_size, ++k) {
    const std::int64_t end = std::min(system.nframes, begin + set_size);
    RawSet set;
    set.where = fmt::format("{}/set.{:03d}", system.source, k);
    set.coord = slice(system.coord, begin, end, ncoord);
    set.energy = slice(system.energy, begin, end, 1);
    set.energy.shape = {end - begin};
    if (system.periodic) set.box = slice(system.box, begin, end, 9);
    if (system.has_force()) set.force = slice(system.force, begin, end, ncoord);
    if (system.has_virial()) set.virial = slice(system.virial, begin, end, 9);
    sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace deepkf
