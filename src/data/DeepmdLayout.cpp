#include "src/data/DeepmdLayout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"
#include "src/data/TypeMix.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {

namespace {

using Shape = std::vector<std::int64_t>;

std::int64_t rows_of(const Shape& s) { return s.empty() ? 1 : s[0]; }

std::int64_t cols_of(const Shape& s) {
  std::int64_t c = 1;
  for (std::size_t i = 1; i < s.size(); ++i) c *= s[i];
  return c;
}

std::string shape_text(const Shape& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

// Checks a per-frame array: rows == nframes and columns == cols.
void check_shape(const ArraySource& a, const char* name, const std::string& where, std::int64_t nframes,
                 std::int64_t cols, const std::string& cols_meaning) {
  const Shape& s = a.shape();
  if (s.empty() || rows_of(s) != nframes)
    throw DataError(fmt::format("{} in {} has {} rows, coord.npy has {}", name, where,
                                s.empty() ? 0 : rows_of(s), nframes));
  if (cols_of(s) != cols)
    throw DataError(fmt::format("{} in {} has shape {}: {} values per frame, expected {}", name, where,
                                shape_text(s), cols_of(s), cols_meaning));
}

// Throws for the first non-finite value of `rows` rows of `cols` values whose first row is row `first` of
// the set; `per_atom` values per atom (3 for coordinates and forces, 0 when a row is not per atom).
void check_finite(const double* data, std::int64_t rows, std::int64_t cols, std::int64_t first,
                  const char* name, const std::string& where, int per_atom) {
  const double* end = data + rows * cols;
  const double* it = std::find_if(data, end, [](double v) { return !std::isfinite(v); });
  if (it == end) return;
  const std::int64_t i = it - data;
  const std::int64_t frame = first + i / cols;
  const std::int64_t col = i % cols;
  if (per_atom > 0)
    throw DataError(fmt::format("{} in {} has a non-finite value ({}) at frame {} atom {} component {}", name,
                                where, *it, frame, col / per_atom, "xyz"[col % per_atom]));
  throw DataError(
      fmt::format("{} in {} has a non-finite value ({}) at frame {} entry {}", name, where, *it, frame, col));
}

// A DeePMD system's frames, read set by set as they are asked for.
class LayoutFrameSource final : public FrameSource {
 public:
  LayoutFrameSource(SystemInfo info, std::vector<SetLayout> sets, std::vector<std::int64_t> set_begin)
      : FrameSource(std::move(info)), sets_(std::move(sets)), set_begin_(std::move(set_begin)) {}

 protected:
  void fill(const std::vector<std::int64_t>& frames, System& out) const override {
    const SystemInfo& in = info();
    const std::int64_t ncoord = 3 * in.natoms;
    const auto n = static_cast<std::int64_t>(frames.size());
    out.coord.resize(static_cast<std::size_t>(n * ncoord));
    out.energy.resize(static_cast<std::size_t>(n));
    if (in.periodic) out.box.resize(static_cast<std::size_t>(n * 9));
    if (in.has_force) out.force.resize(static_cast<std::size_t>(n * ncoord));
    if (in.has_virial) out.virial.resize(static_cast<std::size_t>(n * 9));

    // Visit the requested frames in file order, one run of consecutive rows of one set at a time: a run
    // is one read per array. `order` lists output positions sorted by frame.
    std::vector<std::int64_t> order(frames.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return frames[static_cast<std::size_t>(a)] < frames[static_cast<std::size_t>(b)];
    });
    std::vector<double> buf;
    for (std::size_t k = 0; k < order.size();) {
      const std::int64_t first = frames[static_cast<std::size_t>(order[k])];
      const auto set = static_cast<std::size_t>(
          std::upper_bound(set_begin_.begin(), set_begin_.end(), first) - set_begin_.begin() - 1);
      const std::int64_t set_end = set_begin_[set + 1];
      // Extend the run over equal or next frames within this set.
      std::size_t j = k + 1;
      std::int64_t last = first;
      while (j < order.size()) {
        const std::int64_t f = frames[static_cast<std::size_t>(order[j])];
        if (f >= set_end || f > last + 1) break;
        last = f;
        ++j;
      }
      const std::int64_t row = first - set_begin_[set];
      const std::int64_t count = last - first + 1;
      const SetLayout& s = sets_[set];
      // Reads `cols` values per frame of array a into `to` at the output positions of this run.
      auto take = [&](const ArraySource& a, std::int64_t cols, std::vector<double>& to, const char* name,
                      int per_atom, bool is_box = false) {
        buf.resize(static_cast<std::size_t>(count * cols));
        a.read_rows(row, count, buf.data());
        check_finite(buf.data(), count, cols, row, name, s.where, per_atom);
        if (is_box)
          for (std::int64_t r = 0; r < count; ++r)
            Cell::validate(buf.data() + 9 * r, fmt::format("box.npy in {} frame {}", s.where, row + r));
        for (std::size_t i = k; i < j; ++i) {
          const std::int64_t pos = order[i];
          const std::int64_t r = frames[static_cast<std::size_t>(pos)] - first;
          std::copy(buf.begin() + r * cols, buf.begin() + (r + 1) * cols, to.begin() + pos * cols);
        }
      };
      take(*s.coord, ncoord, out.coord, "coord.npy", 3);
      take(*s.energy, 1, out.energy, "energy.npy", 0);
      if (in.periodic) take(*s.box, 9, out.box, "box.npy", 0, true);
      if (in.has_force) take(*s.force, ncoord, out.force, "force.npy", 3);
      if (in.has_virial) take(*s.virial, 9, out.virial, "virial.npy", 0);
      k = j;
    }
  }

 private:
  std::vector<SetLayout> sets_;
  std::vector<std::int64_t> set_begin_;  // first frame of each set, then the total
};

}  // namespace

std::shared_ptr<FrameSource> open_layout_system(SystemLayout raw) {
  const std::string& src = raw.source;
  if (!raw.has_types) throw DataError(fmt::format("{} has no type.raw", src));
  if (raw.types.empty()) throw DataError(fmt::format("type.raw in {} is empty", src));
  const auto max_type = *std::max_element(raw.types.begin(), raw.types.end());
  if (raw.type_map.empty())
    for (std::int64_t t = 0; t <= max_type; ++t)
      raw.type_map.push_back(unnamed_type(static_cast<std::size_t>(t)));
  const auto ntypes = static_cast<std::int64_t>(raw.type_map.size());
  for (std::size_t i = 0; i < raw.types.size(); ++i) {
    if (raw.types[i] < 0 || raw.types[i] >= ntypes)
      throw DataError(
          fmt::format("type.raw in {} has atom type {} at atom {}, outside type_map.raw ({}: {} types)", src,
                      raw.types[i], i, fmt::join(raw.type_map, " "), ntypes));
  }
  if (raw.sets.empty()) throw DataError(fmt::format("{} has no set.* with frames", src));

  SystemInfo info;
  info.source = src;
  info.type_map = raw.type_map;
  info.atom_types.assign(raw.types.begin(), raw.types.end());
  info.periodic = raw.periodic;
  info.natoms = static_cast<std::int64_t>(raw.types.size());
  info.has_force = raw.sets.front().force != nullptr;
  info.has_virial = raw.sets.front().virial != nullptr;
  const std::int64_t ncoord = 3 * info.natoms;
  const std::string atoms_text = fmt::format("3 x {} atoms = {}", info.natoms, ncoord);

  std::vector<std::int64_t> set_begin = {0};
  for (const SetLayout& set : raw.sets) {
    const std::string& w = set.where;
    if (!set.coord) throw DataError(fmt::format("{} has no coord.npy", w));
    if (!set.energy) throw DataError(fmt::format("{} has no energy.npy", w));
    if (info.periodic && !set.box)
      throw DataError(fmt::format("{} has no box.npy (required unless the system is marked nopbc)", w));
    if ((set.force != nullptr) != info.has_force)
      throw DataError(fmt::format("force.npy is {} in {} but {} in {}", info.has_force ? "present" : "absent",
                                  raw.sets.front().where, set.force ? "present" : "absent", w));
    if ((set.virial != nullptr) != info.has_virial)
      throw DataError(fmt::format("virial.npy is {} in {} but {} in {}",
                                  info.has_virial ? "present" : "absent", raw.sets.front().where,
                                  set.virial ? "present" : "absent", w));

    const Shape& cs = set.coord->shape();
    if (cs.empty()) throw DataError(fmt::format("coord.npy in {} is a 0-d array", w));
    const std::int64_t n = rows_of(cs);
    if (cols_of(cs) != ncoord)
      throw DataError(fmt::format("coord.npy in {} has shape {}: {} values per frame, expected {}", w,
                                  shape_text(cs), cols_of(cs), atoms_text));
    // energy: (nframes,) or (nframes, 1)
    check_shape(*set.energy, "energy.npy", w, n, 1, "1 energy");
    if (set.force) check_shape(*set.force, "force.npy", w, n, ncoord, atoms_text);
    if (info.periodic) check_shape(*set.box, "box.npy", w, n, 9, "9 (3 x 3 cell)");
    if (set.virial) check_shape(*set.virial, "virial.npy", w, n, 9, "9 (3 x 3 virial)");
    set_begin.push_back(set_begin.back() + n);
  }
  info.nframes = set_begin.back();
  return std::make_shared<LayoutFrameSource>(std::move(info), std::move(raw.sets), std::move(set_begin));
}

std::vector<std::shared_ptr<FrameSource>> open_layout_systems(SystemLayout layout) {
  const bool mixed = std::any_of(layout.sets.begin(), layout.sets.end(),
                                 [](const SetLayout& set) { return set.real_types != nullptr; });
  if (!mixed) return {open_layout_system(std::move(layout))};
  std::vector<TypeMixSet> sets;
  for (const SetLayout& set : layout.sets) {
    if (!set.real_types)
      throw DataError(
          fmt::format("real_atom_types.npy is in some sets of {} but not in {}: DeePMD-kit's type_mix "
                      "format has it in every set",
                      layout.source, set.where));
    sets.push_back({set.where, set.real_types, 0});
  }
  const bool has_type_map = !layout.type_map.empty();
  const std::vector<SetLayout> layout_sets = layout.sets;  // the frame counts, once checked
  const std::shared_ptr<const FrameSource> padded = open_layout_system(std::move(layout));
  for (std::size_t i = 0; i < sets.size(); ++i) sets[i].nframes = rows_of(layout_sets[i].coord->shape());
  return split_type_mix(padded, sets, has_type_map);
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
