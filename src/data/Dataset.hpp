#pragma once
// A dataset: many systems of different sizes and type maps under one global type map by element name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/data/DataFormat.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/data/FrameSource.hpp"
#include "src/data/System.hpp"

namespace deepkf {

struct LoadOptions {
  // Load data whose units look wrong (see check_units) instead of throwing; the finding is kept in
  // Dataset::warnings.
  bool allow_suspicious_units = false;
};

class Dataset {
 public:
  // Reads every path and remaps all systems to one type map. A path is a system folder (holds type.raw),
  // a folder searched recursively for system folders, an .h5/.hdf5 file, "file.h5#group/path", or an
  // extended XYZ file (.xyz/.extxyz). type_map: the global element order (e.g. the model's type_map; an
  // element of the data missing from it is an error) or empty for the union in order of first
  // appearance. Throws DataError (naming file, array and value) before returning anything when any input
  // is bad, including implausible units unless options.allow_suspicious_units.
  static Dataset load(const std::vector<std::string>& paths, const std::vector<std::string>& type_map = {},
                      const LoadOptions& options = {});

  std::vector<System> systems;        // each with type_map == this->type_map
  std::vector<std::string> type_map;  // global element names
  std::vector<std::string> warnings;  // findings that did not stop the load

  std::int64_t total_frames() const;
};

// A dataset opened without reading its frames: the systems as FrameSources under one type map.
struct OpenedData {
  std::vector<std::shared_ptr<FrameSource>> systems;  // each with info().type_map == type_map
  std::vector<std::string> type_map;
  std::vector<std::size_t> path_index;  // systems[i] was found under paths[path_index[i]]
};

// Opens every path (as Dataset::load reads them) and remaps all systems to one type map (given, or the
// union of the elements that occur, in order of first appearance). Reads types, type maps and array
// shapes only (extended XYZ files are read whole); frame values are checked when frames are read, and
// units are not judged (that needs the labels: see check_units). Throws DataError for a bad path or
// layout, or for an element missing from type_map (naming type_map_origin, e.g. "model.type_map of FILE").
OpenedData open_dataset(const std::vector<std::string>& paths, const std::vector<std::string>& type_map = {},
                        const std::string& type_map_origin = {});
// The same with what each path holds already decided (formats[i] = data_format(paths[i])).
OpenedData open_dataset(const std::vector<std::string>& paths, const std::vector<DataFormat>& formats,
                        const std::vector<std::string>& type_map, const std::string& type_map_origin);

// The systems under one path, opened (see open_dataset) or read whole, each with its own type map.
std::vector<std::shared_ptr<FrameSource>> open_systems(const std::string& path);
std::vector<std::shared_ptr<FrameSource>> open_systems(const std::string& path, DataFormat format);
std::vector<System> read_systems(const std::string& path);

// The frames stored under one path, counted by a plain scan that does not depend on how systems are found:
// the rows of every set.*/coord.npy array below a folder or in an hdf5 file (or group), the frames of an
// extended XYZ file as its count lines delimit them. `deepkf data summary` compares it with the frames
// read, so that no frame can be skipped unnoticed. Throws DataError for an unreadable file.
std::int64_t count_frames_found(const std::string& path);

// "first path" or "first path (and K more)", for messages about a load.
std::string describe_paths(const std::vector<std::string>& paths);

// Rewrites system.atom_types to index `type_map` (element names) and sets system.type_map to it. Throws
// DataError naming the system and the element when one is missing from type_map.
void remap_types(System& system, const std::vector<std::string>& type_map);

}  // namespace deepkf
