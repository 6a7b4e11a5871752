#pragma once
// The deepmd/hdf5 layout written by dpdata's to_deepmd_hdf5: one HDF5 file holding systems as groups, each
// mirroring an npy system folder (datasets type.raw (integers), type_map.raw (fixed- or variable-length
// strings), an optional nopbc dataset, and groups set.NNN with datasets coord.npy, box.npy, energy.npy,
// force.npy, virial.npy). Systems may sit in nested groups; a group is a system when it has type.raw.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/data/System.hpp"

namespace deepkf {

// True when the file part of `path` (before an optional '#group') ends in .h5 or .hdf5.
bool is_hdf5_path(const std::string& path);

// Opens the systems of "file.h5" (all of them) or "file.h5#group/path" (that system, or every system
// below that group), depth first in name order; each source's name is "file.h5#/group/path". Only types,
// type maps and dataset shapes are read now; frames are read on demand (one hyperslab H5Dread per array
// and run of consecutive frames). Throws DataError naming the file and the object for a missing,
// truncated or corrupt file, a missing group, and any layout error (see open_layout_system).
std::vector<std::shared_ptr<FrameSource>> open_hdf5_systems(const std::string& path);

// The frames stored in "file.h5" or "file.h5#group": the rows of every coord.npy dataset in a set.* group
// below it, counted by walking every object of the file, independently of how open_hdf5_systems finds
// systems (a check that no frames were skipped). Throws DataError naming the file when it cannot be read.
std::int64_t count_hdf5_frames(const std::string& path);

// Writes a new file (replacing `path`) with systems[i] in the group named group_names[i] ('/' nests
// groups), float64 arrays in sets of at most set_size frames, and the text attributes attributes[i] (name ->
// value; none when `attributes` is empty) on group i. Not atomic: callers wanting that write to a temporary
// name and rename. Throws DataError naming the file when HDF5 fails.
void write_hdf5_systems(const std::string& path, const std::vector<System>& systems,
                        const std::vector<std::string>& group_names, std::int64_t set_size = 5000,
                        const std::vector<std::map<std::string, std::string>>& attributes = {});

// The text attribute `name` of the group or file object `object` ("/" for the file) of an hdf5 file, or ""
// when there is none. Throws DataError naming the file when it cannot be read.
std::string read_hdf5_text_attribute(const std::string& path, const std::string& object,
                                     const std::string& name);

}  // namespace deepkf
