#pragma once
// What a data path holds, decided in one place from its name and what is at it, for every reader and
// command that takes data paths (Dataset.hpp, FrameInputs.hpp, `deepkf convert`).
#include <string>

namespace deepkf {

enum class DataFormat {
  kHdf5,        // "file.h5" or "file.hdf5", optionally "#group/path" (decided by the name alone)
  kMissing,     // nothing at the path
  kExtXyz,      // a file named .xyz or .extxyz
  kLmdb,        // DeePMD-kit's LMDB database: a path named .lmdb, or a folder holding data.mdb
  kNpySystem,   // a DeePMD npy system: a folder holding type.raw
  kLammpsDump,  // a text file whose first line with words is "ITEM: TIMESTEP"
  kFolder,      // any other folder: searched recursively for systems
  kOther,       // a file of none of these kinds
};

DataFormat data_format(const std::string& path);

// "an HDF5 file", "a LAMMPS dump", ..., for messages.
const char* describe(DataFormat format);

}  // namespace deepkf
