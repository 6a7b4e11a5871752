#pragma once
// DeePMD-kit's LMDB data layout (deepmd/dpmodel/utils/lmdb_data.py; example data in
// examples/lmdb_downsample_data). The database is a folder holding data.mdb. Key "__metadata__" holds a
// msgpack map: "nframes" (the frame count), "frame_idx_fmt" (the Python format of a frame's key, default
// "012d": frame 7 is stored under "000000000007"), optional "type_map" (element names that the frames'
// atom types index; without it the types index the model's type_map) and optional "frame_nlocs" (atoms
// per frame). Each frame is a msgpack map of arrays (LmdbRecord.hpp): "atom_types" (natoms integers),
// "coords" (natoms x 3, A), "cells" (3 x 3, A; absent or all zero: a non-periodic frame), "energies" (one
// value or a plain number, eV), optional "forces" (natoms x 3, eV/A) and "virials" (3 x 3, eV); other
// entries (atom_numbs, atom_names, orig, fparam, ...) are not read. Frames may differ in atoms: frames
// with the same atom types in the same order, periodicity and labels form one system.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/data/FrameSource.hpp"

namespace deepkf {

// True when `path` ends in ".lmdb" (as DeePMD-kit decides) or is a folder holding data.mdb.
bool is_lmdb_path(const std::string& path);

// Opens the database: reads the metadata and every frame's atom types, cell and label entries (to form
// the systems); frame values are read again when asked for. Systems are named "PATH:FORMULA" (see
// system_names). Throws DataError "LMDB PATH key KEY: ..." naming the entry and its value for a missing
// or malformed metadata entry, a missing frame key, a frame that is not a msgpack map, a missing or
// mis-shaped array, an atom type outside the type map or negative (DeePMD-kit's virtual atoms), and,
// when frames are read, a non-finite value or an invalid cell.
std::vector<std::shared_ptr<FrameSource>> open_lmdb_systems(const std::string& path);

// The frames stored in the database counted without reading them: its keys other than "__metadata__".
// Throws DataError when it cannot be opened.
std::int64_t count_lmdb_frames(const std::string& path);

}  // namespace deepkf
