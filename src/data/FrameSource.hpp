#pragma once
// A system whose frames are read on demand. Opening one reads only what describes it (atom types, type
// map, frame count, which labels exist); frames come from the file when asked for, so a rank of a
// data-parallel job reads only the frames it evaluates and no process holds a dataset it does not need.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

// What a System is without its frames: its atoms, and which labels the frames carry.
struct SystemInfo : SystemAtoms {
  bool has_force = false;
  bool has_virial = false;
};

class FrameSource {
 public:
  explicit FrameSource(SystemInfo info) : info_(std::move(info)) {}
  virtual ~FrameSource() = default;
  FrameSource(const FrameSource&) = delete;
  FrameSource& operator=(const FrameSource&) = delete;

  const SystemInfo& info() const { return info_; }
  std::int64_t nframes() const { return info_.nframes; }

  // The frames (indices in [0, nframes), any order, repeats allowed) as a System holding them in that
  // order. Values are checked as they are read (finite numbers, valid cells): throws DataError naming the
  // file, set, array, frame and atom.
  System read(const std::vector<std::int64_t>& frames) const;
  System read_range(std::int64_t begin, std::int64_t end) const;
  System read_all() const { return read_range(0, info_.nframes); }

  // Re-indexes the atom types to `type_map` (element names); throws DataError naming the system and the
  // element when one is missing.
  void remap_types(const std::vector<std::string>& type_map);

  // Frames read so far (each read of a frame counts once), for logs and for tests of data sharding.
  std::int64_t frames_read() const { return frames_read_; }

 protected:
  // Fills out.coord, box, energy, force and virial with `frames` (valid indices) in the given order.
  virtual void fill(const std::vector<std::int64_t>& frames, System& out) const = 0;
  // `source`'s fill, for a source whose frames are built from another's (no distance check, not counted).
  static void fill_from(const FrameSource& source, const std::vector<std::int64_t>& frames, System& out) {
    source.fill(frames, out);
  }

 private:
  SystemInfo info_;
  mutable std::int64_t frames_read_ = 0;
};

// Frames already in memory (extended XYZ files, which have no index to seek by, and tests).
class MemoryFrameSource final : public FrameSource {
 public:
  explicit MemoryFrameSource(System system);

 protected:
  void fill(const std::vector<std::int64_t>& frames, System& out) const override;

 private:
  System system_;
};

// The frames `frames` (indices, any order) of `system` as a new system. Throws DataError for an index out
// of range.
System select_frames(const System& system, const std::vector<std::int64_t>& frames);

// The name of type t in a system without type_map.raw, as dpdata names it: Type_0, Type_1, ...
std::string unnamed_type(std::size_t t);

// Names for the systems found in one file: "path:FORMULA", FORMULA each element of species[i] with its
// count in order of first appearance (e.g. "md.xyz:H2O1"). When two systems share a formula (another atom
// order, periodicity or labels) the later ones get "_nopbc" (when !periodic[i]) and/or "_K" (K = i)
// appended.
std::vector<std::string> system_names(const std::string& path,
                                      const std::vector<std::vector<std::string>>& species,
                                      const std::vector<bool>& periodic);

// Rewrites atom_types (indices into `from`) to index `to` by element name. Throws DataError naming
// `source` and the element when one is missing from `to`. A system without names (no type_map.raw: `from` is
// Type_0, Type_1, ...) keeps its indices into `to`, as DeePMD-kit reads it; an index past `to` is an error.
void remap_atom_types(std::vector<int>& atom_types, const std::vector<std::string>& from,
                      const std::vector<std::string>& to, const std::string& source);

// Some frames of a source: a training or validation part after a split. Positions index `frames`.
struct FrameSubset {
  std::shared_ptr<const FrameSource> source;
  std::vector<std::int64_t> frames;  // indices into source, in order

  const SystemInfo& info() const { return source->info(); }
  std::int64_t nframes() const { return static_cast<std::int64_t>(frames.size()); }
  // The frames at `positions` (indices into `frames`), in that order.
  System read(const std::vector<std::int64_t>& positions) const;
  // Positions [begin, end).
  System read_range(std::int64_t begin, std::int64_t end) const;
};

// Every frame of each source.
std::vector<FrameSubset> whole(const std::vector<std::shared_ptr<FrameSource>>& sources);

}  // namespace deepkf
