#pragma once
// DeePMD npy system folders: type.raw and type_map.raw (text), an optional empty `nopbc` file, and
// set.NNN/{coord,box,energy,force,virial}.npy. Multiple sets are concatenated in name order.
#include <memory>
#include <string>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/data/System.hpp"

namespace deepkf {

// True when `dir` is a folder holding type.raw.
bool is_npy_system(const std::string& dir);

// Opens one system folder: reads type.raw, type_map.raw and the .npy headers (float32 or float64 arrays,
// values read as float64); frames are read when asked for. Throws DataError naming the folder, set and
// array for anything missing or mis-shaped, and (when read) naming the frame and atom of a non-finite
// value or a bad cell. A type_mix folder that forms several systems is an error here (open_npy_systems).
std::shared_ptr<FrameSource> open_npy_system(const std::string& dir);

// open_npy_system for any folder, one in DeePMD-kit's type_mix format (set.*/real_atom_types.npy) included:
// its frames as the ordinary systems they form (TypeMix.hpp).
std::vector<std::shared_ptr<FrameSource>> open_npy_systems(const std::string& dir);

// Writes `system` as a system folder (created if needed): float64 arrays, sets of at most set_size
// frames. Throws DataError when a file cannot be written.
void write_npy_system(const std::string& dir, const System& system, std::int64_t set_size = 5000);

}  // namespace deepkf
