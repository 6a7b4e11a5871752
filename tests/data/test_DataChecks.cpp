// Data that must not pass silently: frames in a folder or hdf5 group without type.raw (an error naming it,
// not a skip), the frames found in the files against those read, atoms closer than kMinAtomDistance
// (periodic images included), and headers or count lines that claim more than the file holds.
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/ExtXyz.hpp"
#include "src/data/NpyFile.hpp"
#include "src/geometry/NeighborList.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::DataError;
using deepkf::Dataset;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::synthetic_system;
using deepkf::test::SyntheticArrays;
using deepkf::test::write_raw_npy;
using deepkf::test::write_synthetic_system;
using deepkf::test::write_text;

namespace {

// Every frame under `paths`, read: the frames a load gets (units are not judged).
std::int64_t frames_read(const std::vector<std::string>& paths) {
  std::int64_t n = 0;
  for (const auto& source : deepkf::open_dataset(paths).systems) n += source->read_all().nframes;
  return n;
}

}  // namespace

TEST_CASE("a folder with set.* but no type.raw is an error naming it, not a skipped system",
          "[data][errors][dropped]") {
  const std::string dir = make_temp_dir("untyped-folder");
  write_synthetic_system(dir + "/systems/a", SyntheticArrays(5));
  write_synthetic_system(dir + "/systems/b", SyntheticArrays(7));
  // A folder without set.* is not a system: it is passed over, as before.
  write_text(dir + "/systems/notes/README", "not data\n");
  CHECK(frames_read({dir + "/systems"}) == 12);
  CHECK(deepkf::count_frames_found(dir + "/systems") == 12);

  // b loses its type.raw: formerly its 7 frames were dropped without a word (5 frames loaded).
  fs::remove(dir + "/systems/b/type.raw");
  CHECK_THROWS_AS(Dataset::load({dir + "/systems"}), DataError);
  CHECK_THROWS_WITH(Dataset::load({dir + "/systems"}),
                    Contains(dir + "/systems/b holds frames (set.000) but no type.raw"));
  // Named directly, too.
  CHECK_THROWS_WITH(Dataset::load({dir + "/systems/b"}),
                    Contains(dir + "/systems/b") && Contains("no type.raw"));
  // The plain count still sees every stored frame.
  CHECK(deepkf::count_frames_found(dir + "/systems") == 12);
  fs::remove_all(dir);
}

TEST_CASE("an hdf5 group with set.* but no type.raw is an error naming it, not a skipped system",
          "[data][hdf5][errors][dropped]") {
  const std::string dir = make_temp_dir("untyped-group");
  const std::string file = dir + "/data.h5";
  deepkf::write_hdf5_systems(file, {synthetic_system(27), synthetic_system(13)}, {"one", "deep/two"}, 10);
  {
    // Groups without set.* are not systems.
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "/metadata", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Fclose(f);
  }
  CHECK(frames_read({file}) == 40);
  CHECK(deepkf::count_frames_found(file) == 40);
  CHECK(deepkf::count_frames_found(file + "#deep") == 13);
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(H5Ldelete(f, "/one/type.raw", H5P_DEFAULT) >= 0);
    H5Fclose(f);
  }
  // Formerly: 13 frames read, 27 dropped.
  CHECK_THROWS_AS(Dataset::load({file}), DataError);
  CHECK_THROWS_WITH(Dataset::load({file}), Contains(file + "#/one holds frames (set.000) but no type.raw"));
  CHECK_THROWS_WITH(Dataset::load({file + "#one"}), Contains(file + "#/one") && Contains("no type.raw"));
  CHECK(frames_read({file + "#deep"}) == 13);
  CHECK(deepkf::count_frames_found(file) == 40);
  fs::remove_all(dir);
}

TEST_CASE("frames found in extended xyz files are counted by their count lines", "[data][extxyz]") {
  const std::string dir = make_temp_dir("xyz-count");
  const std::string frame = "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1\nH 0 0 0\nH 1 0 0\n";
  write_text(dir + "/a.xyz", frame + "\n" + frame + "3\nenergy=-2\nO 0 0 0\nH 1 0 0\nH 0 1 0\n");
  CHECK(deepkf::count_frames_found(dir + "/a.xyz") == 3);
  CHECK(frames_read({dir + "/a.xyz"}) == 3);
  fs::remove_all(dir);
}

TEST_CASE("close contacts: the first atom with a neighbour nearer than rmin, periodic images included",
          "[geometry][data]") {
  const double box[9] = {10, 0, 0, 0, 10, 0, 0, 0, 10};
  {
    const std::vector<double> x = {1, 1, 1, 3, 3, 3, 5, 5, 5};
    CHECK_FALSE(deepkf::find_close_contact(x.data(), 3, box, 0.1).found);
    CHECK_FALSE(deepkf::find_close_contact(x.data(), 3, nullptr, 0.1).found);
  }
  {
    const std::vector<double> x = {1, 1, 1, 3, 3, 3, 3.05, 3, 3};
    const auto c = deepkf::find_close_contact(x.data(), 3, box, 0.1);
    REQUIRE(c.found);
    CHECK(c.i == 1);
    CHECK(c.j == 2);
    CHECK(c.distance == Approx(0.05));
  }
  {
    // Only through the periodic boundary: 0.02 and 9.99 are 0.03 A apart.
    const std::vector<double> x = {0.02, 5, 5, 3, 3, 3, 9.99, 5, 5};
    const auto c = deepkf::find_close_contact(x.data(), 3, box, 0.1);
    REQUIRE(c.found);
    CHECK(c.i == 0);
    CHECK(c.j == 2);
    CHECK(c.distance == Approx(0.03));
    CHECK(c.shift[0] == -10.0);
    // Without the cell they are far apart.
    CHECK_FALSE(deepkf::find_close_contact(x.data(), 3, nullptr, 0.1).found);
  }
  {
    // A cell thinner than rmin: an atom meets its own image.
    const double thin[9] = {0.05, 0, 0, 0, 10, 0, 0, 0, 10};
    const std::vector<double> x = {0, 5, 5};
    const auto c = deepkf::find_close_contact(x.data(), 1, thin, 0.1);
    REQUIRE(c.found);
    CHECK(c.i == 0);
    CHECK(c.j == 0);
  }
}

TEST_CASE("atoms closer than 0.1 A are an error naming the file, frame and atoms when the frame is read",
          "[data][errors][geometry]") {
  const std::string dir = make_temp_dir("close-atoms");
  System s = synthetic_system(6);
  // Frame 4, atom 2 onto atom 1 (formerly accepted; training then failed with a nan innovation).
  for (int k = 0; k < 3; ++k) s.coord[12 * 4 + 3 * 2 + k] = s.coord[12 * 4 + 3 * 1 + k];
  // Frame 1, atom 3 across the boundary from atom 0: 0.04 A apart through the periodic image only.
  const double x0[3] = {0.01, 4, 4}, x3[3] = {9.97, 4, 4};
  for (int k = 0; k < 3; ++k) {
    s.coord[12 * 1 + k] = x0[k];
    s.coord[12 * 1 + 9 + k] = x3[k];
  }
  deepkf::write_npy_system(dir + "/npy", s, 3);
  deepkf::write_hdf5_systems(dir + "/data.h5", {s}, {"sys"}, 3);
  for (const auto& [path, source] : {std::pair<std::string, std::string>{dir + "/npy", dir + "/npy"},
                                     {dir + "/data.h5", dir + "/data.h5#/sys"}}) {
    INFO(path);
    const auto sources = deepkf::open_systems(path);
    REQUIRE(sources.size() == 1);
    CHECK(sources[0]->read({0, 2, 3, 5}).nframes == 4);
    CHECK_THROWS_WITH(sources[0]->read({0, 4}),
                      Contains(source + " frame 4: atoms 1 and 2 are 0 A apart, closer than 0.1 A"));
    CHECK_THROWS_WITH(sources[0]->read({1}),
                      Contains(source + " frame 1: atoms 0 and 3 (a periodic image of 3) are 0.04 A apart"));
    // What `deepkf data summary` and `deepkf test` load.
    CHECK_THROWS_AS(Dataset::load({path}), DataError);
  }
  // Extended XYZ (frames held in memory) goes through the same check.
  write_text(dir + "/close.xyz",
             "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1\nH 0 0 0\nH 1 0 0\n"
             "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1\nH 0 0 0\nH 0 0 4.95\n");
  CHECK_THROWS_WITH(
      Dataset::load({dir + "/close.xyz"}),
      Contains(dir + "/close.xyz:H2 frame 1: atoms 0 and 1 (a periodic image of 1) are 0.05 A apart"));
  fs::remove_all(dir);
}

TEST_CASE("npy headers: a shape that is not digits, or too large for the file, is one data error",
          "[data][npy][errors]") {
  const std::string dir = make_temp_dir("npy-shape");
  const std::string path = dir + "/a.npy";
  struct Case {
    std::string shape, expected;
  };
  // Formerly: std::stoll's invalid_argument / out_of_range escaped as an internal error, and a product of
  // dimensions could overflow past the truncation check.
  const std::vector<Case> cases = {
      {"(2, x)", "bad shape (2, x) in npy header ('x' is not a dimension)"},
      {"(2, 3a)", "bad shape (2, 3a) in npy header ('3a' is not a dimension)"},
      {"(-2, 3)", "bad shape (-2, 3) in npy header ('-2' is not a dimension)"},
      {"(99999999999999999999, 3)",
       "bad shape (99999999999999999999, 3) in npy header (a dimension overflows)"},
      {"(4294967296, 4294967296, 4294967296)",
       "is truncated: its shape (4294967296, 4294967296, 4294967296)"},
      {"(1000, 3)", "is truncated: its shape (1000, 3) needs more data than the file's"},
  };
  for (const auto& c : cases) {
    INFO(c.shape);
    write_raw_npy(path, "{'descr': '<f8', 'fortran_order': False, 'shape': " + c.shape + ", }",
                  std::vector<double>(6));
    CHECK_THROWS_AS(deepkf::read_npy_header(path), DataError);
    CHECK_THROWS_WITH(deepkf::read_npy_header(path), Contains(path) && Contains(c.expected));
  }
  write_raw_npy(path, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", std::vector<double>(6));
  CHECK(deepkf::read_npy_header(path).shape == std::vector<std::int64_t>{2, 3});
  write_raw_npy(path, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }", {});
  CHECK(deepkf::read_npy_header(path).shape == std::vector<std::int64_t>{0, 3});
  {
    // A version-2 header length of 4 GiB in a small file.
    std::FILE* f = std::fopen(path.c_str(), "wb");
    const unsigned char prefix[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff};
    std::fwrite(prefix, 1, sizeof prefix, f);
    std::fclose(f);
    CHECK_THROWS_WITH(deepkf::read_npy_header(path), Contains(path) && Contains("truncated npy header"));
  }
  fs::remove_all(dir);
}

TEST_CASE("extended xyz: an atom count the file cannot hold is one data error", "[data][extxyz][errors]") {
  const std::string dir = make_temp_dir("xyz-count-line");
  const std::string file = dir + "/big.xyz";
  // Formerly: std::bad_alloc from reserving room for 99999999999 atoms.
  write_text(file, "99999999999\nenergy=-1\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_AS(deepkf::read_extxyz(file), DataError);
  CHECK_THROWS_WITH(
      deepkf::read_extxyz(file),
      Contains(file + " line 1: atom count 99999999999 is impossible") && Contains("bytes follow"));
  write_text(file, "3\nenergy=-1\nH 0 0 0\nH 1 0 0\n");  // one atom line short: the usual message
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains("2 of 3 atom lines"));
  write_text(file, "2\nenergy=-1\nH 0 0 0\nH 1 0 0");  // shortest lines, no final newline: fine
  CHECK(deepkf::read_extxyz(file).size() == 1);
  fs::remove_all(dir);
}
