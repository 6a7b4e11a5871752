// The DeePMD npy layout: npy files and system folders, read and written, and their error messages.
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/NpyFile.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::read_npy_system;
using deepkf::test::SyntheticArrays;
using deepkf::test::write_raw_npy;
using deepkf::test::write_synthetic_system;
using deepkf::test::write_text;

TEST_CASE("npy files round-trip in float64, float32 and int64 with their shapes", "[data][npy]") {
  const std::string dir = make_temp_dir("npy");
  const std::vector<double> v = {1.5, -2.25, 3.0, 1e-3, 7.0, -8.0};
  deepkf::write_npy(dir + "/a.npy", {2, 3}, v.data(), deepkf::NpyDtype::kFloat64);
  deepkf::write_npy(dir + "/b.npy", {6}, v.data(), deepkf::NpyDtype::kFloat32);
  deepkf::write_npy(dir + "/c.npy", {3, 2}, v.data(), deepkf::NpyDtype::kInt64);
  const auto a = deepkf::read_npy(dir + "/a.npy");
  CHECK(a.shape == std::vector<std::int64_t>{2, 3});
  CHECK(a.dtype == "<f8");
  CHECK(a.data == v);
  const auto b = deepkf::read_npy(dir + "/b.npy");
  CHECK(b.shape == std::vector<std::int64_t>{6});
  CHECK(b.dtype == "<f4");
  for (std::size_t i = 0; i < v.size(); ++i)
    CHECK(b.data[i] == static_cast<double>(static_cast<float>(v[i])));
  const auto c = deepkf::read_npy(dir + "/c.npy");
  CHECK(c.rows() == 3);
  CHECK(c.cols() == 2);
  CHECK(c.data == std::vector<double>{1, -2, 3, 0, 7, -8});  // truncation toward zero
  fs::remove_all(dir);
}

TEST_CASE("npy reader rejects fortran order, big-endian and truncated data", "[data][npy][errors]") {
  const std::string dir = make_temp_dir("npy-bad");
  write_raw_npy(dir + "/fortran.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }",
                {1, 2, 3, 4});
  CHECK_THROWS_WITH(deepkf::read_npy(dir + "/fortran.npy"),
                    Contains("fortran.npy") && Contains("fortran order"));
  write_raw_npy(dir + "/big.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (4,), }", {1, 2, 3, 4});
  CHECK_THROWS_WITH(deepkf::read_npy(dir + "/big.npy"),
                    Contains("big.npy") && Contains("big-endian") && Contains(">f8"));
  write_raw_npy(dir + "/short.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", {1, 2, 3});
  CHECK_THROWS_WITH(deepkf::read_npy(dir + "/short.npy"), Contains("short.npy") && Contains("truncated"));
  write_raw_npy(dir + "/complex.npy", "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", {1, 2});
  CHECK_THROWS_WITH(deepkf::read_npy(dir + "/complex.npy"), Contains("complex.npy") && Contains("<c16"));
  fs::remove_all(dir);
}

TEST_CASE("npy system folder: values, two sets in order, (n,1) energy and nopbc", "[data][npy]") {
  const std::string dir = make_temp_dir("npysys");
  const SyntheticArrays a(5);
  // Split the 5 frames as set.000 = frames 0-2 and set.001 = frames 3-4, energy stored as (n, 1).
  write_text(dir + "/sys/type.raw", "0 1 1 0");
  write_text(dir + "/sys/type_map.raw", "O H");
  for (int s = 0; s < 2; ++s) {
    const std::int64_t b = s == 0 ? 0 : 3, n = s == 0 ? 3 : 2;
    const std::string set = dir + "/sys/set.00" + std::to_string(s);
    fs::create_directories(set);
    deepkf::write_npy(set + "/coord.npy", {n, 12}, a.coord.data() + 12 * b, deepkf::NpyDtype::kFloat32);
    deepkf::write_npy(set + "/force.npy", {n, 12}, a.force.data() + 12 * b);
    deepkf::write_npy(set + "/energy.npy", {n, 1}, a.energy.data() + b);
    deepkf::write_npy(set + "/box.npy", {n, 9}, a.box.data() + 9 * b);
  }
  const System s = read_npy_system(dir + "/sys");
  CHECK(s.nframes == 5);
  CHECK(s.natoms == 4);
  CHECK(s.type_map == std::vector<std::string>{"O", "H"});
  CHECK(s.atom_types == std::vector<int>{0, 1, 1, 0});
  CHECK(s.periodic);
  CHECK(s.energy == a.energy);
  CHECK(s.force == a.force);
  CHECK(s.box == a.box);
  for (std::size_t i = 0; i < a.coord.size(); ++i)
    CHECK(s.coord[i] == static_cast<double>(static_cast<float>(a.coord[i])));
  CHECK_FALSE(s.has_virial());

  // Without a box but with nopbc the system is non-periodic.
  write_text(dir + "/mol/type.raw", "0 1 1 0");
  fs::create_directories(dir + "/mol/set.000");
  deepkf::write_npy(dir + "/mol/set.000/coord.npy", {5, 12}, a.coord.data());
  deepkf::write_npy(dir + "/mol/set.000/energy.npy", {5}, a.energy.data());
  write_text(dir + "/mol/nopbc", "");
  const System m = read_npy_system(dir + "/mol");
  CHECK_FALSE(m.periodic);
  CHECK(m.box.empty());
  CHECK(m.type_map == std::vector<std::string>{"Type_0", "Type_1"});  // no type_map.raw: dpdata's names
  CHECK_FALSE(m.has_force());
  fs::remove_all(dir);
}

TEST_CASE("npy system errors name the file, the array and the value", "[data][npy][errors]") {
  const std::string dir = make_temp_dir("npy-errors");
  const std::string sys = dir + "/sys";
  const std::string set = sys + "/set.000";
  SyntheticArrays a(3);
  write_synthetic_system(sys, a);
  REQUIRE_NOTHROW(read_npy_system(sys));

  SECTION("energy with fewer rows than coord") {
    deepkf::write_npy(set + "/energy.npy", {2}, a.energy.data());
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("energy.npy in " + set + " has 2 rows, coord.npy has 3"));
  }
  SECTION("force with a wrong column count") {
    deepkf::write_npy(set + "/force.npy", {3, 11}, a.force.data());
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("force.npy in " + set) && Contains("(3, 11)") && Contains("3 x 4 atoms = 12"));
  }
  SECTION("box and virial rows") {
    deepkf::write_npy(set + "/box.npy", {2, 9}, a.box.data());
    CHECK_THROWS_WITH(read_npy_system(sys), Contains("box.npy in " + set + " has 2 rows, coord.npy has 3"));
    write_synthetic_system(sys, a);
    deepkf::write_npy(set + "/virial.npy", {4, 9}, a.virial.data());
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("virial.npy in " + set + " has 4 rows, coord.npy has 3"));
  }
  SECTION("coord with a wrong column count") {
    deepkf::write_npy(set + "/coord.npy", {3, 9}, a.coord.data());
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("coord.npy in " + set) && Contains("expected 3 x 4 atoms"));
  }
  SECTION("non-finite coordinate: frame and atom") {
    a.coord[12 * 1 + 3 * 2 + 1] = std::numeric_limits<double>::quiet_NaN();  // frame 1, atom 2, y
    write_synthetic_system(sys, a);
    CHECK_THROWS_WITH(read_npy_system(sys), Contains("coord.npy in " + set) && Contains("nan") &&
                                                Contains("frame 1 atom 2 component y"));
  }
  SECTION("non-finite force and energy") {
    a.force[12 * 2 + 3 * 3] = std::numeric_limits<double>::infinity();
    write_synthetic_system(sys, a);
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("force.npy in " + set) && Contains("inf") && Contains("frame 2 atom 3"));
    a = SyntheticArrays(3);
    a.energy[1] = std::numeric_limits<double>::quiet_NaN();
    write_synthetic_system(sys, a);
    CHECK_THROWS_WITH(read_npy_system(sys), Contains("energy.npy in " + set) && Contains("frame 1"));
  }
  SECTION("missing type.raw") {
    fs::remove(sys + "/type.raw");
    CHECK_THROWS_WITH(read_npy_system(sys), Contains(sys) && Contains("no type.raw"));
  }
  SECTION("missing coord, energy, box") {
    fs::remove(set + "/coord.npy");
    CHECK_THROWS_WITH(read_npy_system(sys), Contains(set) && Contains("no coord.npy"));
    write_synthetic_system(sys, a);
    fs::remove(set + "/energy.npy");
    CHECK_THROWS_WITH(read_npy_system(sys), Contains(set) && Contains("no energy.npy"));
    write_synthetic_system(sys, a);
    fs::remove(set + "/box.npy");
    CHECK_THROWS_WITH(read_npy_system(sys), Contains(set) && Contains("no box.npy") && Contains("nopbc"));
  }
  SECTION("no sets") {
    fs::remove_all(set);
    CHECK_THROWS_WITH(read_npy_system(sys), Contains(sys) && Contains("no set."));
  }
  SECTION("atom type outside the type map") {
    write_text(sys + "/type.raw", "0 1 2 0");
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("type.raw in " + sys) && Contains("atom type 2 at atom 2") && Contains("O H"));
    write_text(sys + "/type.raw", "0 1 x 0");
    CHECK_THROWS_WITH(read_npy_system(sys), Contains("type.raw in " + sys) && Contains("'x'"));
  }
  SECTION("singular cell") {
    for (int k = 0; k < 3; ++k) a.box[9 * 2 + 6 + k] = a.box[9 * 2 + 3 + k];  // frame 2: c = b
    write_synthetic_system(sys, a);
    CHECK_THROWS_WITH(read_npy_system(sys),
                      Contains("box.npy in " + set + " frame 2") && Contains("singular"));
  }
  SECTION("left-handed cell") {
    a.box[9 * 1 + 8] = -10.0;  // frame 1: c = (0, 0, -10)
    write_synthetic_system(sys, a);
    CHECK_THROWS_WITH(read_npy_system(sys), Contains("box.npy in " + set + " frame 1") &&
                                                Contains("left-handed") && Contains("-1000"));
  }
  SECTION("force in one set only") {
    fs::create_directories(sys + "/set.001");
    for (const char* name : {"coord.npy", "box.npy", "energy.npy"})
      fs::copy(set + "/" + name, sys + "/set.001/" + name);
    CHECK_THROWS_WITH(read_npy_system(sys), Contains("force.npy is present in " + set) &&
                                                Contains("absent in " + sys + "/set.001"));
  }
  fs::remove_all(dir);
}
