#pragma once
// DeePMD npy system folders: type.raw and type_map.raw (text), an optional empty `nopbc` file, and
// set.NNN/{coord,box,energy,force,virial}.npy. Multiple sets are concatenated in name order.
#include <string>

#include "src/data/System.hpp"

namespace deepkf {

// True when `dir` is a folder holding type.raw.
bool is_npy_system(const std::string& dir);

// Reads one system folder (float32 or float64 arrays; values held as float64). Throws DataError naming the
// folder, set, array, frame and atom for anything missing, mis-shaped, non-finite or out of range.
System read_npy_system(const std::string& dir);

// Writes `system` as a system folder (created if needed): float64 arrays, sets of at most set_size
// frames. Throws DataError when a file cannot be written.
void write_npy_system(const std::string& dir, const System& system, std::int64_t set_size = 5000);

}  // namespace deepkf
