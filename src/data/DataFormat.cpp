#include "src/data/DataFormat.hpp"

#include <filesystem>

#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdLmdb.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/LammpsDump.hpp"

namespace fs = std::filesystem;

namespace deepkf {

DataFormat data_format(const std::string& path) {
  // An HDF5 path may name a group after '#', so it is not a file name; its reader says what is missing.
  if (is_hdf5_path(path)) return DataFormat::kHdf5;
  std::error_code ec;
  if (!fs::exists(path, ec)) return DataFormat::kMissing;
  const bool file = fs::is_regular_file(path, ec);
  const std::string ext = fs::path(path).extension().string();
  if (file && (ext == ".xyz" || ext == ".extxyz")) return DataFormat::kExtXyz;
  if (is_lmdb_path(path)) return DataFormat::kLmdb;
  if (is_npy_system(path)) return DataFormat::kNpySystem;
  if (file) return is_lammps_dump(path) ? DataFormat::kLammpsDump : DataFormat::kOther;
  return fs::is_directory(path, ec) ? DataFormat::kFolder : DataFormat::kOther;
}

const char* describe(DataFormat format) {
  switch (format) {
    case DataFormat::kHdf5:
      return "an HDF5 file";
    case DataFormat::kMissing:
      return "a path that does not exist";
    case DataFormat::kExtXyz:
      return "an extended XYZ file";
    case DataFormat::kLmdb:
      return "an LMDB database";
    case DataFormat::kNpySystem:
      return "a DeePMD npy system";
    case DataFormat::kLammpsDump:
      return "a LAMMPS dump";
    case DataFormat::kFolder:
      return "a folder of systems";
    case DataFormat::kOther:
      break;
  }
  return "a file of no known data format";
}

}  // namespace deepkf
