// DeePMD-kit's LMDB data layout: databases written by tests/data/make_lmdb.py in DeePMD-kit's layout
// (python lmdb + msgpack, as deepmd/dpmodel/utils/lmdb_data.py reads them) give, frame for frame, the
// numbers of npy folders written from the same values; damaged databases give one DataError naming the
// database, the key and the value. DeePMD-kit's own example database (examples/lmdb_downsample_data, from a
// checkout; skipped without one) holds the frames of its water data_0 exactly.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdLmdb.hpp"
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

// The databases and npy folders of make_lmdb.py, written once per test process; exits with the skip code
// when the script cannot run (no python lmdb/msgpack/numpy).
const std::string& lmdb_fixtures() {
  static const std::string dir = [] {
    const std::string out = deepkf::test::make_temp_dir("lmdb");
    const std::string cmd =
        std::string(DEEPKF_DATA_PYTHON) + " " + DEEPKF_SOURCE_DIR + "/tests/data/make_lmdb.py " + out;
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::fprintf(stderr, "skipped: %s failed (status %d): python3 with lmdb, msgpack and numpy needed\n",
                   cmd.c_str(), rc);
      std::_Exit(77);
    }
    return out;
  }();
  return dir;
}

}  // namespace

TEST_CASE("an LMDB database gives the frames of the npy folders written from the same numbers",
          "[data][lmdb]") {
  const std::string dir = lmdb_fixtures();
  const std::string db = dir + "/good.lmdb";
  CHECK(deepkf::is_lmdb_path(db));
  CHECK(deepkf::is_lmdb_path(db + "/"));
  const auto sources = deepkf::open_systems(db);
  // Frames A B A A B A B: two systems in order of first appearance, frames in database order.
  REQUIRE(sources.size() == 2);
  CHECK(sources[0]->info().source == db + ":O1H2");
  CHECK(sources[1]->info().source == db + ":H3O1");
  CHECK(sources[0]->frames_read() == 0);
  CHECK(sources[1]->info().has_force);
  CHECK_FALSE(sources[1]->info().has_virial);
  require_same_system(sources[0]->read_all(), deepkf::open_npy_system(dir + "/npy/sys_a")->read_all());
  require_same_system(sources[1]->read_all(), deepkf::open_npy_system(dir + "/npy/sys_b")->read_all());
  // Any frames in any order, as a rank reads them.
  const System some = sources[0]->read({3, 0, 0});
  const System all = deepkf::open_npy_system(dir + "/npy/sys_a")->read({3, 0, 0});
  CHECK(some.coord == all.coord);
  CHECK(some.energy == all.energy);
  CHECK(deepkf::count_frames_found(db) == 7);
}

TEST_CASE("LMDB with the least metadata: default key format, no type map, no shapes, big-endian data",
          "[data][lmdb]") {
  const std::string dir = lmdb_fixtures();
  const auto sources = deepkf::open_systems(dir + "/plain.lmdb");
  REQUIRE(sources.size() == 1);
  // Without a type_map the types index the model's type map, as for an npy folder without type_map.raw.
  CHECK(sources[0]->info().type_map == std::vector<std::string>{"Type_0", "Type_1"});
  const auto opened = deepkf::open_dataset({dir + "/plain.lmdb"}, {"O", "H"});
  System s = opened.systems[0]->read_all();
  require_same_system(s, deepkf::open_npy_system(dir + "/npy/sys_a")->read_all());
}

TEST_CASE("LMDB databases next to npy folders are found in a folder and counted", "[data][lmdb]") {
  const std::string dir = lmdb_fixtures();
  const std::string mixed = deepkf::test::make_temp_dir("lmdb-folder");
  fs::create_directory_symlink(dir + "/good.lmdb", mixed + "/a.lmdb");
  fs::create_directory_symlink(dir + "/npy/sys_b", mixed + "/b");
  const auto opened = deepkf::open_dataset({mixed}, {"H", "O"});
  REQUIRE(opened.systems.size() == 3);
  CHECK(opened.systems[0]->info().source == mixed + "/a.lmdb:O1H2");
  CHECK(opened.systems[0]->info().atom_types == std::vector<int>{1, 0, 0});  // remapped to H O by name
  CHECK(opened.systems[2]->info().source == mixed + "/b");
  CHECK(deepkf::count_frames_found(mixed) == 10);
  fs::remove_all(mixed);
}

TEST_CASE("a damaged LMDB database is one data error naming the database, the key and the value",
          "[data][lmdb][errors]") {
  const std::string bad = lmdb_fixtures() + "/bad/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"no_metadata", "no_metadata.lmdb has no __metadata__ key"},
      {"metadata_not_msgpack", "key __metadata__: the value is not msgpack (2 bytes): parse error"},
      {"nframes_text", "key __metadata__: nframes is \"seven\", expected a positive integer"},
      {"missing_frame", "has no key 000000000005 (frame 5; __metadata__ nframes is 7)"},
      {"key_format", "key __metadata__: frame_idx_fmt is \"%d\", expected an integer format"},
      {"type_map_numbers", "key __metadata__: type_map is [8,1], expected a list of element names"},
      {"frame_nlocs_wrong", "key 000000000005: 'atom_types' has 3 atoms, __metadata__ frame_nlocs gives 5"},
      {"frame_not_msgpack", "key 000000000002: the value is not msgpack (8 bytes)"},
      {"frame_not_map", "key 000000000002: the value is [1,2,3], expected a msgpack map"},
      {"no_coords", "key 000000000003: no 'coords'"},
      {"coords_short", "key 000000000003: 'coords' has shape 8 (8 values), expected natoms x 3 = 9"},
      {"unknown_dtype", "key 000000000000: 'forces' has type \"complex64\", expected float32, float64"},
      {"data_length", "key 000000000000: 'coords' has 34 bytes of data, not a whole number of 4-byte items"},
      {"shape_mismatch", "key 000000000000: 'coords' has shape [4,3] but 9 items of data"},
      {"nan_force", "key 000000000002: 'forces' has a non-finite value (nan) at atom 2 component y"},
      {"negative_type", "key 000000000000: 'atom_types' has type -1 at atom 1; negative types"},
      {"type_outside",
       "key 000000000000: 'atom_types' has type 2 at atom 1, outside the metadata's type_map"},
      {"float_types", "key 000000000000: 'atom_types' holds floating-point values"},
      {"flat_cell", "key 000000000000: 'cells' is singular"},
      {"no_energy", "key 000000000001: no 'energies'"},
  };
  for (const auto& [name, expected] : cases) {
    INFO(name);
    const std::string what = read_error_of(bad + name + ".lmdb");
    CHECK_THAT(what, Contains("LMDB " + bad + name + ".lmdb") && Contains(expected));
    CHECK(what.find('\n') == std::string::npos);
  }
}

TEST_CASE("a path named .lmdb that is not an LMDB folder, or a truncated one, is a data error naming it",
          "[data][lmdb][errors]") {
  const std::string dir = deepkf::test::make_temp_dir("lmdb-not");
  fs::create_directory(dir + "/empty.lmdb");
  std::ofstream(dir + "/file.lmdb") << "not a database";
  CHECK_THAT(read_error_of(dir + "/empty.lmdb"),
             Contains(dir + "/empty.lmdb cannot be opened as an LMDB database (a folder holding data.mdb)"));
  CHECK_THAT(read_error_of(dir + "/file.lmdb"),
             Contains(dir + "/file.lmdb cannot be opened as an LMDB database"));
  CHECK_THAT(read_error_of(dir + "/absent.lmdb"),
             Contains("data path " + dir + "/absent.lmdb does not exist"));
  // A copy cut short: liblmdb would read its missing pages through the map (a bus error).
  fs::create_directory(dir + "/cut.lmdb");
  fs::copy_file(lmdb_fixtures() + "/good.lmdb/data.mdb", dir + "/cut.lmdb/data.mdb");
  fs::resize_file(dir + "/cut.lmdb/data.mdb", 9000);
  CHECK_THAT(
      read_error_of(dir + "/cut.lmdb"),
      Contains("LMDB " + dir + "/cut.lmdb: data.mdb is truncated: 9000 bytes, its header names pages"));
  fs::remove_all(dir);
}

TEST_CASE("DeePMD-kit's example LMDB holds the frames of its water data_0 exactly", "[data][lmdb][deepmd]") {
  const std::string db = fs::path(deepkf::test::require_deepmd_kit_file(
                                      "examples/lmdb_downsample_data/water_training.lmdb/data.mdb"))
                             .parent_path()
                             .string();
  // Its README: "80 frames downsampled from water/data/data_0"; that folder holds 80 frames, all of them.
  const std::string npy = deepkf::test::require_shared_dataset("water/data_0");
  const auto sources = deepkf::open_systems(db);
  REQUIRE(sources.size() == 1);
  CHECK(sources[0]->info().source == db + ":O64H128");
  CHECK(sources[0]->info().type_map == std::vector<std::string>{"O", "H"});
  CHECK_FALSE(sources[0]->info().has_virial);
  require_same_system(sources[0]->read_all(), deepkf::open_npy_system(npy)->read_all());
  CHECK(deepkf::count_frames_found(db) == 80);
}
