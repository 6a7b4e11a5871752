#include "src/data/TypeMix.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)

#include <algorithm>
#include <cmath>
#include <map>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// The frames of a type_mix folder whose real types are one row: the padded frames without their virtual
// atoms.
class TypeMixFrameSource final : public FrameSource {
 public:
  TypeMixFrameSource(SystemInfo info, std::shared_ptr<const FrameSource> padded,
                     std::vector<std::int64_t> frames, std::vector<std::int64_t> atoms)
      : FrameSource(std::move(info)),
        padded_(std::move(padded)),
        frames_(std::move(frames)),
        atoms_(std::move(atoms)) {}

 protected:
  void fill(const std::vector<std::int64_t>& frames, System& out) const override {
    std::vector<std::int64_t> padded_frames;
    padded_frames.reserve(frames.size());
    for (const auto f : frames) padded_frames.push_back(frames_[static_cast<std::size_t>(f)]);
    System full;
    fill_from(*padded_, padded_frames, full);
    const auto n = static_cast<std::size_t>(padded_->info().natoms);
    // coordinates and forces: the rows of the real atoms of each frame
    auto keep = [&](const std::vector<double>& from, std::vector<double>& to) {
      for (std::size_t k = 0; k < frames.size() && !from.empty(); ++k)
        for (const auto a : atoms_) {
          const auto row =
              from.begin() + static_cast<std::ptrdiff_t>(3 * (k * n + static_cast<std::size_t>(a)));
          to.insert(to.end(), row, row + 3);
        }
    };
    keep(full.coord, out.coord);
    keep(full.force, out.force);
    out.box = std::move(full.box);
    out.energy = std::move(full.energy);
    out.virial = std::move(full.virial);
  }

 private:
  std::shared_ptr<const FrameSource> padded_;
  std::vector<std::int64_t> frames_;  // this system's frames in the padded folder
  std::vector<std::int64_t> atoms_;   // the real atoms (type >= 0) of those frames
};

// Reads and checks one set's real types: nframes rows of natoms integers in [-1, ntypes).
std::vector<int> set_types(const TypeMixSet& set, std::int64_t natoms,
                           const std::vector<std::string>& type_map) {
  const std::vector<std::int64_t>& shape = set.real_types->shape();
  std::int64_t cols = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) cols *= shape[i];
  if (shape.empty() || shape[0] != set.nframes || cols != natoms)
    throw DataError(fmt::format("real_atom_types.npy in {} has shape ({}), expected {} frames x {} atoms",
                                set.where, fmt::join(shape, ", "), set.nframes, natoms));
  std::vector<double> values(static_cast<std::size_t>(set.nframes * natoms));
  set.real_types->read_rows(0, set.nframes, values.data());
  std::vector<int> types(values.size());
  const auto ntypes = static_cast<double>(type_map.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double t = values[i];
    if (!(t >= -1 && t < ntypes && t == std::floor(t)))
      throw DataError(
          fmt::format("real_atom_types.npy in {} has type {} at frame {} atom {}, outside type_map.raw "
                      "({}: {} types; -1 marks a virtual atom)",
                      set.where, t, static_cast<std::int64_t>(i) / natoms,
                      static_cast<std::int64_t>(i) % natoms, fmt::join(type_map, " "), type_map.size()));
    types[i] = static_cast<int>(t);
  }
  return types;
}

}  // namespace

std::vector<std::shared_ptr<FrameSource>> split_type_mix(const std::shared_ptr<const FrameSource>& padded,
                                                         const std::vector<TypeMixSet>& sets,
                                                         bool has_type_map) {
  const SystemInfo& in = padded->info();
  if (!has_type_map)
    throw DataError(
        fmt::format("{} is in DeePMD-kit's type_mix format (real_atom_types.npy) but has no "
                    "type_map.raw, which names the types of that format",
                    in.source));
  const auto natoms = static_cast<std::size_t>(in.natoms);
  std::map<std::vector<int>, std::size_t> index_of;  // a frame's real types -> its system
  std::vector<std::vector<int>> rows;
  std::vector<std::vector<std::int64_t>> members;
  std::int64_t frame = 0;
  for (const TypeMixSet& set : sets) {
    const std::vector<int> types = set_types(set, in.natoms, in.type_map);
    for (std::int64_t f = 0; f < set.nframes; ++f, ++frame) {
      std::vector<int> row(types.begin() + static_cast<std::ptrdiff_t>(f * in.natoms),
                           types.begin() + static_cast<std::ptrdiff_t>((f + 1) * in.natoms));
      if (std::all_of(row.begin(), row.end(), [](int t) { return t < 0; }))
        throw DataError(
            fmt::format("real_atom_types.npy in {} frame {}: every atom is virtual (-1)", set.where, f));
      const auto [it, added] = index_of.emplace(row, rows.size());
      if (added) {
        rows.push_back(std::move(row));
        members.emplace_back();
      }
      members[it->second].push_back(frame);
    }
  }
  std::vector<std::vector<std::string>> species(rows.size());
  for (std::size_t g = 0; g < rows.size(); ++g)
    for (const int t : rows[g])
      if (t >= 0) species[g].push_back(in.type_map[static_cast<std::size_t>(t)]);
  const std::vector<std::string> names =
      system_names(in.source, species, std::vector<bool>(rows.size(), in.periodic));
  std::vector<std::shared_ptr<FrameSource>> out;
  for (std::size_t g = 0; g < rows.size(); ++g) {
    SystemInfo info = in;
    info.source = names[g];
    info.atom_types.clear();
    std::vector<std::int64_t> atoms;
    for (std::size_t a = 0; a < natoms; ++a)
      if (rows[g][a] >= 0) {
        atoms.push_back(static_cast<std::int64_t>(a));
        info.atom_types.push_back(rows[g][a]);
      }
    info.natoms = static_cast<std::int64_t>(atoms.size());
    info.nframes = static_cast<std::int64_t>(members[g].size());
    out.push_back(std::make_shared<TypeMixFrameSource>(std::move(info), padded, std::move(members[g]),
                                                       std::move(atoms)));
  }
  return out;
}

}  // namespace deepkf
