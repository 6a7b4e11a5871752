#pragma once
// Small synthetic DeePMD systems written into a test's temp dir, to be broken one array at a time.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/NpyFile.hpp"
#include "src/data/System.hpp"
#include "tests/support/Catch.hpp"

namespace deepkf::test {

inline void write_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// The arrays of a synthetic 4-atom O/H system (types 0 1 1 0 of "O H") with nframes frames: coordinates
// spread in a 10 A cubic box, forces of order 1 eV/A, energies near -20 eV.
struct SyntheticArrays {
  std::int64_t nframes, natoms = 4;
  std::vector<double> coord, box, energy, force, virial;

  explicit SyntheticArrays(std::int64_t n) : nframes(n) {
    for (std::int64_t f = 0; f < n; ++f) {
      for (std::int64_t i = 0; i < natoms; ++i)
        for (int k = 0; k < 3; ++k) {
          coord.push_back(1.0 + 2.0 * static_cast<double>(i) + 0.3 * k + 0.01 * static_cast<double>(f));
          force.push_back(std::sin(1.0 + static_cast<double>(f * 12 + i * 3 + k)));
        }
      const double b[9] = {10, 0, 0, 0, 10, 0, 0, 0, 10};
      box.insert(box.end(), b, b + 9);
      energy.push_back(-20.0 + 0.01 * std::cos(static_cast<double>(f)));
      for (int k = 0; k < 9; ++k) virial.push_back(0.1 * k - 0.05 * static_cast<double>(f));
    }
  }
};

// Checks that two systems hold the same atoms and frames, value for value.
inline void require_same_system(const System& a, const System& b) {
  CHECK(a.type_map == b.type_map);
  CHECK(a.atom_types == b.atom_types);
  CHECK(a.periodic == b.periodic);
  CHECK(a.nframes == b.nframes);
  CHECK(a.natoms == b.natoms);
  CHECK(a.coord == b.coord);
  CHECK(a.box == b.box);
  CHECK(a.energy == b.energy);
  CHECK(a.force == b.force);
  CHECK(a.virial == b.virial);
}

// The message of the DataError that reading every system under `path` raises, or "no error".
inline std::string read_error_of(const std::string& path) {
  try {
    (void)read_systems(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

// The same arrays (with virials) as a periodic System named "synthetic".
inline System synthetic_system(std::int64_t nframes) {
  const SyntheticArrays a(nframes);
  System s;
  s.source = "synthetic";
  s.type_map = {"O", "H"};
  s.atom_types = {0, 1, 1, 0};
  s.nframes = nframes;
  s.natoms = 4;
  s.coord = a.coord;
  s.box = a.box;
  s.energy = a.energy;
  s.force = a.force;
  s.virial = a.virial;
  return s;
}

// A .npy file with a hand-written header dict (padded as numpy pads it) and `data` as float64, for headers
// our writer never produces.
inline void write_raw_npy(const std::string& path, const std::string& dict, const std::vector<double>& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const unsigned char prefix[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(header.size()), 0};
  std::fwrite(prefix, 1, 10, f);
  std::fwrite(header.data(), 1, header.size(), f);
  std::fwrite(data.data(), sizeof(double), data.size(), f);
  std::fclose(f);
}

// Writes `a` as an npy system folder: dir/type.raw, type_map.raw, set.000/*.npy (float64).
inline void write_synthetic_system(const std::string& dir, const SyntheticArrays& a,
                                   bool with_virial = false) {
  write_text(dir + "/type.raw", "0 1 1 0\n");
  write_text(dir + "/type_map.raw", "O\nH\n");
  const std::string set = dir + "/set.000";
  std::filesystem::create_directories(set);
  const std::int64_t n = a.nframes, c = 3 * a.natoms;
  write_npy(set + "/coord.npy", {n, c}, a.coord.data());
  write_npy(set + "/box.npy", {n, 9}, a.box.data());
  write_npy(set + "/energy.npy", {n}, a.energy.data());
  write_npy(set + "/force.npy", {n, c}, a.force.data());
  if (with_virial) write_npy(set + "/virial.npy", {n, 9}, a.virial.data());
}

// Every frame of the systems a reader opens.
inline System read_npy_system(const std::string& dir) { return open_npy_system(dir)->read_all(); }
inline std::vector<System> read_hdf5_systems(const std::string& path) {
  std::vector<System> out;
  for (const auto& source : open_hdf5_systems(path)) out.push_back(source->read_all());
  return out;
}

}  // namespace deepkf::test
