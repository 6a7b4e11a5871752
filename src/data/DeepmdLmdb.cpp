#include "src/data/DeepmdLmdb.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

#include "src/core/Error.hpp"
#include "src/data/LmdbFile.hpp"
#include "src/data/LmdbRecord.hpp"
#include "src/geometry/Cell.hpp"

namespace fs = std::filesystem;

namespace deepkf {

namespace {

using json = nlohmann::json;

const std::string kMetadataKey = "__metadata__";
// Without a type_map in the metadata the types index the model's type map: no element table is this long.
constexpr double kMaxUnnamedType = 1000;

struct Metadata {
  std::int64_t nframes = 0;
  bool zero_pad = true;  // frame_idx_fmt: "0" flag (else padded with spaces) and width
  int width = 12;
  std::vector<std::string> type_map;      // empty when the metadata has none
  std::vector<std::int64_t> frame_nlocs;  // empty when the metadata has none

  // The key of frame i: Python's format(i, frame_idx_fmt).
  std::string key(std::int64_t i) const {
    const std::string digits = std::to_string(i);
    const auto pad = static_cast<std::size_t>(std::max<int>(0, width - static_cast<int>(digits.size())));
    return std::string(pad, zero_pad ? '0' : ' ') + digits;
  }
};

std::string where_of(const std::string& path, const std::string& key) {
  return fmt::format("LMDB {} key {}", path, key);
}

// frame_idx_fmt: the format specs of an integer that DeePMD-kit's writers use, "[0][width]d".
void parse_key_format(const json& value, Metadata& meta, const std::string& where) {
  std::string spec = value.is_string() ? value.get<std::string>() : std::string();
  const bool ok = !spec.empty() && spec.back() == 'd' && spec.size() <= 4 &&
                  std::all_of(spec.begin(), spec.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
  if (!ok)
    throw DataError(fmt::format("{}: frame_idx_fmt is {}, expected an integer format such as \"012d\"", where,
                                value_text(value)));
  spec.pop_back();
  meta.zero_pad = !spec.empty() && spec[0] == '0';
  meta.width = spec.empty() ? 0 : std::stoi(spec);
}

std::vector<std::int64_t> unsigned_list(const json& value, const char* name, const std::string& where) {
  std::vector<std::int64_t> out;
  if (value.is_array())
    for (const json& v : value) {
      if (!v.is_number_unsigned()) break;
      out.push_back(v.get<std::int64_t>());
    }
  if (!value.is_array() || out.size() != value.size())
    throw DataError(fmt::format("{}: {} is {}, expected a list of non-negative integers", where, name,
                                value_text(value)));
  return out;
}

Metadata read_metadata(const LmdbFile& db) {
  const std::string where = where_of(db.path(), kMetadataKey);
  const auto raw = db.get(kMetadataKey);
  if (!raw)
    throw DataError(
        fmt::format("LMDB {} has no {} key (DeePMD-kit's LMDB data keeps nframes and the key "
                    "format there)",
                    db.path(), kMetadataKey));
  const json m = decode_record(*raw, db.path(), kMetadataKey);
  Metadata meta;
  if (!m.contains("nframes") || !m["nframes"].is_number_unsigned() || m["nframes"].get<std::uint64_t>() == 0)
    throw DataError(fmt::format("{}: nframes is {}, expected a positive integer (the frame count)", where,
                                m.contains("nframes") ? value_text(m["nframes"]) : "missing"));
  meta.nframes = m["nframes"].get<std::int64_t>();
  if (m.contains("frame_idx_fmt")) parse_key_format(m["frame_idx_fmt"], meta, where);
  if (m.contains("type_map")) {
    const json& t = m["type_map"];
    if (t.is_array())
      for (const json& name : t) {
        if (!name.is_string() || name.get<std::string>().empty()) break;
        meta.type_map.push_back(name.get<std::string>());
      }
    if (!t.is_array() || t.empty() || meta.type_map.size() != t.size())
      throw DataError(
          fmt::format("{}: type_map is {}, expected a list of element names", where, value_text(t)));
  }
  if (m.contains("frame_nlocs")) {
    meta.frame_nlocs = unsigned_list(m["frame_nlocs"], "frame_nlocs", where);
    if (static_cast<std::int64_t>(meta.frame_nlocs.size()) != meta.nframes)
      throw DataError(fmt::format("{}: frame_nlocs has {} entries, nframes is {}", where,
                                  meta.frame_nlocs.size(), meta.nframes));
  }
  return meta;
}

// One frame as stored, checked: shapes against the atom count, finite values, a valid cell.
struct LmdbFrame {
  std::vector<int> types;
  bool periodic = false;
  std::vector<double> coord, box, force, virial;
  double energy = 0.0;
};

void check_finite(const std::vector<double>& v, const char* name, const std::string& where, bool per_atom) {
  const auto it = std::find_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
  if (it == v.end()) return;
  const auto i = it - v.begin();
  if (per_atom)
    throw DataError(fmt::format("{}: '{}' has a non-finite value ({}) at atom {} component {}", where, name,
                                *it, i / 3, "xyz"[i % 3]));
  throw DataError(fmt::format("{}: '{}' has a non-finite value ({}) at entry {}", where, name, *it, i));
}

// record[name] with `count` values ("natoms x 3" and so on in `meaning`), checked to be finite.
std::vector<double> values_of(const json& record, const char* name, std::size_t count, const char* meaning,
                              const std::string& where, bool per_atom = false) {
  RecordArray a = record_array(record, name, where);
  if (a.values.size() != count)
    throw DataError(fmt::format("{}: '{}' has shape {} ({} values), expected {} = {}", where, name,
                                fmt::join(a.shape, " x "), a.values.size(), meaning, count));
  check_finite(a.values, name, where, per_atom);
  return std::move(a.values);
}

std::vector<int> types_of(const json& record, const Metadata& meta, const std::string& where) {
  const RecordArray a = record_array(record, "atom_types", where);
  if (!a.integral)
    throw DataError(fmt::format("{}: 'atom_types' holds floating-point values, expected integers", where));
  if (a.values.empty()) throw DataError(fmt::format("{}: 'atom_types' is empty", where));
  const auto ntypes = static_cast<double>(meta.type_map.size());
  std::vector<int> types(a.values.size());
  for (std::size_t i = 0; i < types.size(); ++i) {
    const double t = a.values[i];
    if (t < 0)
      throw DataError(
          fmt::format("{}: 'atom_types' has type {} at atom {}; negative types (DeePMD-kit's "
                      "virtual atoms) are not supported",
                      where, t, i));
    if (!meta.type_map.empty() && t >= ntypes)
      throw DataError(
          fmt::format("{}: 'atom_types' has type {} at atom {}, outside the metadata's type_map "
                      "({}: {} types)",
                      where, t, i, fmt::join(meta.type_map, " "), meta.type_map.size()));
    if (meta.type_map.empty() && t >= kMaxUnnamedType)
      throw DataError(
          fmt::format("{}: 'atom_types' has type {} at atom {}, and the metadata has no "
                      "type_map for such an index",
                      where, t, i));
    types[i] = static_cast<int>(t);
  }
  return types;
}

LmdbFrame read_frame(const LmdbFile& db, const Metadata& meta, std::int64_t index) {
  const std::string key = meta.key(index);
  const std::string where = where_of(db.path(), key);
  const auto raw = db.get(key);
  if (!raw)
    throw DataError(fmt::format("LMDB {} has no key {} (frame {}; {} nframes is {})", db.path(), key, index,
                                kMetadataKey, meta.nframes));
  const json r = decode_record(*raw, db.path(), key);
  LmdbFrame fr;
  fr.types = types_of(r, meta, where);
  const std::size_t n3 = 3 * fr.types.size();
  const auto natoms = static_cast<std::int64_t>(fr.types.size());
  if (!meta.frame_nlocs.empty() && meta.frame_nlocs[static_cast<std::size_t>(index)] != natoms)
    throw DataError(fmt::format("{}: 'atom_types' has {} atoms, {} frame_nlocs gives {}", where, natoms,
                                kMetadataKey, meta.frame_nlocs[static_cast<std::size_t>(index)]));
  fr.coord = values_of(r, "coords", n3, "natoms x 3", where, true);
  if (r.contains("cells")) {
    fr.box = values_of(r, "cells", 9, "3 x 3", where);
    fr.periodic = std::any_of(fr.box.begin(), fr.box.end(), [](double x) { return x != 0.0; });
    if (fr.periodic)
      Cell::validate(fr.box.data(), where + ": 'cells'");
    else
      fr.box.clear();  // an all-zero cell: a non-periodic frame, as DeePMD-kit reads it
  }
  if (r.contains("energies") && r["energies"].is_number()) {
    fr.energy = r["energies"].get<double>();
    if (!std::isfinite(fr.energy))
      throw DataError(fmt::format("{}: 'energies' is non-finite ({})", where, fr.energy));
  } else {
    fr.energy = values_of(r, "energies", 1, "one energy", where)[0];
  }
  if (r.contains("forces")) fr.force = values_of(r, "forces", n3, "natoms x 3", where, true);
  if (r.contains("virials")) fr.virial = values_of(r, "virials", 9, "3 x 3", where);
  return fr;
}

// What makes frames one system: atom types in order, periodicity, and which labels they carry.
using GroupKey = std::tuple<std::vector<int>, bool, bool, bool>;

GroupKey group_key(const LmdbFrame& fr) {
  return {fr.types, fr.periodic, !fr.force.empty(), !fr.virial.empty()};
}

// The frames of one system of a database, read from it when asked for.
class LmdbFrameSource final : public FrameSource {
 public:
  LmdbFrameSource(SystemInfo info, std::shared_ptr<const LmdbFile> db, std::shared_ptr<const Metadata> meta,
                  GroupKey key, std::vector<std::int64_t> indices)
      : FrameSource(std::move(info)),
        db_(std::move(db)),
        meta_(std::move(meta)),
        key_(std::move(key)),
        indices_(std::move(indices)) {}

 protected:
  void fill(const std::vector<std::int64_t>& frames, System& out) const override {
    for (const auto f : frames) {
      const std::int64_t index = indices_[static_cast<std::size_t>(f)];
      LmdbFrame fr = read_frame(*db_, *meta_, index);
      if (group_key(fr) != key_)
        throw DataError(fmt::format("{}: the frame's atoms or labels changed since the database was opened",
                                    where_of(db_->path(), meta_->key(index))));
      out.coord.insert(out.coord.end(), fr.coord.begin(), fr.coord.end());
      out.box.insert(out.box.end(), fr.box.begin(), fr.box.end());
      out.energy.push_back(fr.energy);
      out.force.insert(out.force.end(), fr.force.begin(), fr.force.end());
      out.virial.insert(out.virial.end(), fr.virial.begin(), fr.virial.end());
    }
  }

 private:
  std::shared_ptr<const LmdbFile> db_;
  std::shared_ptr<const Metadata> meta_;
  GroupKey key_;                       // the types as stored (info's may be remapped to another type map)
  std::vector<std::int64_t> indices_;  // the database's frame indices of this system's frames
};

std::string trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

bool is_lmdb_path(const std::string& path) {
  std::error_code ec;
  const std::string p = trimmed(path);
  return (p.size() > 5 && p.compare(p.size() - 5, 5, ".lmdb") == 0) ||
         fs::is_regular_file(fs::path(p) / "data.mdb", ec);
}

std::vector<std::shared_ptr<FrameSource>> open_lmdb_systems(const std::string& path) {
  auto db = std::make_shared<const LmdbFile>(trimmed(path));
  auto meta = std::make_shared<const Metadata>(read_metadata(*db));
  std::map<GroupKey, std::size_t> index_of;
  std::vector<GroupKey> keys;
  std::vector<std::vector<std::int64_t>> members;
  int max_type = 0;
  for (std::int64_t i = 0; i < meta->nframes; ++i) {
    GroupKey key = group_key(read_frame(*db, *meta, i));
    max_type = std::max(max_type, *std::max_element(std::get<0>(key).begin(), std::get<0>(key).end()));
    const auto [it, added] = index_of.emplace(key, keys.size());
    if (added) {
      keys.push_back(std::move(key));
      members.emplace_back();
    }
    members[it->second].push_back(i);
  }
  // Without a type_map in the metadata, unnamed types up to the largest type of any frame.
  std::vector<std::string> type_map = meta->type_map;
  if (type_map.empty())
    for (int t = static_cast<int>(type_map.size()); t <= max_type; ++t) type_map.push_back(unnamed_type(t));

  std::vector<std::vector<std::string>> species(keys.size());
  std::vector<bool> periodic(keys.size());
  for (std::size_t g = 0; g < keys.size(); ++g) {
    for (const int t : std::get<0>(keys[g])) species[g].push_back(type_map[static_cast<std::size_t>(t)]);
    periodic[g] = std::get<1>(keys[g]);
  }
  const std::vector<std::string> names = system_names(db->path(), species, periodic);
  std::vector<std::shared_ptr<FrameSource>> out;
  for (std::size_t g = 0; g < keys.size(); ++g) {
    SystemInfo info;
    info.source = names[g];
    info.type_map = type_map;
    info.atom_types = std::get<0>(keys[g]);
    info.periodic = std::get<1>(keys[g]);
    info.has_force = std::get<2>(keys[g]);
    info.has_virial = std::get<3>(keys[g]);
    info.natoms = static_cast<std::int64_t>(info.atom_types.size());
    info.nframes = static_cast<std::int64_t>(members[g].size());
    out.push_back(std::make_shared<LmdbFrameSource>(std::move(info), db, meta, std::move(keys[g]),
                                                    std::move(members[g])));
  }
  return out;
}

std::int64_t count_lmdb_frames(const std::string& path) {
  const LmdbFile db(trimmed(path));
  return db.entries() - (db.get(kMetadataKey) ? 1 : 0);
}

}  // namespace deepkf
