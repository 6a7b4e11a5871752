// DeePMD-kit's type_mix format (set.*/real_atom_types.npy, each frame's own atom types, -1 a virtual atom):
// a folder read gives the ordinary systems its frames form, frame for frame, without the virtual atoms;
// bad real types are one data error naming the set, frame, atom and value.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::System;
using deepkf::test::read_error_of;
using deepkf::test::require_same_system;

namespace {

// Real types of the 6 synthetic frames (4 atoms, written as O H H O): frames 0, 2, 4 as written; 1 and 3
// with O and H swapped; frame 5 with atom 2 virtual.
const std::vector<std::vector<double>> kRealTypes = {{0, 1, 1, 0}, {1, 0, 0, 1}, {0, 1, 1, 0},
                                                     {1, 0, 0, 1}, {0, 1, 1, 0}, {0, 1, -1, 1}};

// The synthetic system in type_mix format: type.raw all 0, sets of 4 frames, real_atom_types.npy as int64.
std::string write_type_mix(const std::string& dir, const std::vector<std::vector<double>>& real_types) {
  System s = deepkf::test::synthetic_system(6);
  s.atom_types = {0, 0, 0, 0};
  deepkf::write_npy_system(dir, s, 4);
  for (std::int64_t begin = 0, k = 0; begin < 6; begin += 4, ++k) {
    std::vector<double> rows;
    for (std::int64_t f = begin; f < std::min<std::int64_t>(6, begin + 4); ++f)
      rows.insert(rows.end(), real_types[f].begin(), real_types[f].end());
    const auto n = static_cast<std::int64_t>(rows.size() / 4);
    deepkf::write_npy(fmt::format("{}/set.{:03d}/real_atom_types.npy", dir, k), {n, 4}, rows.data(),
                      deepkf::NpyDtype::kInt64);
  }
  return dir;
}

// Frames `frames` of the synthetic system with atom types `types`, keeping the atoms `atoms`.
System expected(const std::vector<std::int64_t>& frames, const std::vector<int>& types,
                const std::vector<std::size_t>& atoms) {
  System all = deepkf::select_frames(deepkf::test::synthetic_system(6), frames);
  System s = all;
  s.atom_types = types;
  s.natoms = static_cast<std::int64_t>(atoms.size());
  s.coord.clear();
  s.force.clear();
  for (std::size_t k = 0; k < frames.size(); ++k)
    for (const auto a : atoms)
      for (int c = 0; c < 3; ++c) {
        s.coord.push_back(all.coord[(k * 4 + a) * 3 + c]);
        s.force.push_back(all.force[(k * 4 + a) * 3 + c]);
      }
  return s;
}

}  // namespace

TEST_CASE("a type_mix folder gives the ordinary systems of its frames, without virtual atoms",
          "[data][type_mix]") {
  const std::string dir = deepkf::test::make_temp_dir("type-mix");
  write_type_mix(dir + "/mix", kRealTypes);
  const auto sources = deepkf::open_systems(dir + "/mix");
  REQUIRE(sources.size() == 3);
  CHECK(sources[0]->info().source == dir + "/mix:O2H2");
  CHECK(sources[1]->info().source == dir + "/mix:H2O2");
  CHECK(sources[2]->info().source == dir + "/mix:O1H2");
  std::vector<System> read;
  for (const auto& s : sources) read.push_back(s->read_all());
  require_same_system(read[0], expected({0, 2, 4}, {0, 1, 1, 0}, {0, 1, 2, 3}));
  require_same_system(read[1], expected({1, 3}, {1, 0, 0, 1}, {0, 1, 2, 3}));
  require_same_system(read[2], expected({5}, {0, 1, 1}, {0, 1, 3}));
  // The frames found are the folder's rows, whatever systems they form.
  CHECK(deepkf::count_frames_found(dir + "/mix") == 6);
  fs::remove_all(dir);
}

TEST_CASE("bad real_atom_types.npy is one data error naming the set, frame, atom and value",
          "[data][type_mix][errors]") {
  const std::string dir = deepkf::test::make_temp_dir("type-mix-bad");
  auto with = [&](const std::string& name, std::size_t frame, std::vector<double> row) {
    auto types = kRealTypes;
    types[frame] = std::move(row);
    return write_type_mix(dir + "/" + name, types);
  };
  CHECK_THAT(read_error_of(with("outside", 1, {0, 2, 1, 1})),
             Contains("real_atom_types.npy in " + dir +
                      "/outside/set.000 has type 2 at frame 1 atom 1, outside "
                      "type_map.raw (O H: 2 types; -1 marks a virtual atom)"));
  CHECK_THAT(read_error_of(with("below", 4, {0, -2, 1, 1})),
             Contains("real_atom_types.npy in " + dir + "/below/set.001 has type -2 at frame 0 atom 1"));
  CHECK_THAT(read_error_of(with("virtual", 5, {-1, -1, -1, -1})),
             Contains("real_atom_types.npy in " + dir + "/virtual/set.001 frame 1: every atom is virtual"));
  const std::string some = write_type_mix(dir + "/some", kRealTypes);
  fs::remove(some + "/set.001/real_atom_types.npy");
  CHECK_THAT(read_error_of(some),
             Contains("real_atom_types.npy is in some sets of " + some + " but not in " + some + "/set.001"));
  const std::string unnamed = write_type_mix(dir + "/unnamed", kRealTypes);
  fs::remove(unnamed + "/type_map.raw");
  CHECK_THAT(read_error_of(unnamed),
             Contains(unnamed + " is in DeePMD-kit's type_mix format (real_atom_types.npy) but "
                                "has no type_map.raw"));
  const std::string shape = write_type_mix(dir + "/shape", kRealTypes);
  const std::vector<double> three(12, 0.0);
  deepkf::write_npy(shape + "/set.000/real_atom_types.npy", {4, 3}, three.data());
  CHECK_THAT(read_error_of(shape), Contains("real_atom_types.npy in " + shape +
                                            "/set.000 has shape (4, 3), expected 4 frames x 4 atoms"));
  fs::remove_all(dir);
}
