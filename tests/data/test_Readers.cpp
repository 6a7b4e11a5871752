// Readers and writers of the DeePMD npy, deepmd/hdf5 and extended XYZ layouts, and their error messages.
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/ExtXyz.hpp"
#include "src/data/NpyFile.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::DataError;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::require_same_system;
using deepkf::test::SyntheticArrays;
using deepkf::test::write_raw_npy;
using deepkf::test::write_synthetic_system;
using deepkf::test::write_text;

namespace {

// Every frame of the systems a reader opens.
System read_npy_system(const std::string& dir) { return deepkf::open_npy_system(dir)->read_all(); }
std::vector<System> read_hdf5_systems(const std::string& path) {
  std::vector<System> out;
  for (const auto& source : deepkf::open_hdf5_systems(path)) out.push_back(source->read_all());
  return out;
}

// HDF5 helpers for writing files the way h5py/dpdata does (variable-length strings, int32 types, float32).
void h5_write(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const std::vector<hsize_t>& dims,
              const void* data) {
  const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                   : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t ds = H5Dcreate2(loc, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(ds);
  H5Sclose(space);
}

// One non-periodic 4-atom system in group `path` with type_map.raw as variable-length strings, type.raw as
// int32, coordinates and forces as float32 and energy of shape (nframes, 1).
void write_dpdata_like_group(hid_t file, const std::string& path, const SyntheticArrays& a) {
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t g = H5Gcreate2(file, path.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(g >= 0);
  const std::int32_t types[4] = {0, 1, 1, 0};
  h5_write(g, "type.raw", H5T_STD_I32LE, H5T_NATIVE_INT32, {4}, types);
  const char* names[2] = {"O", "H"};
  const hid_t vstr = H5Tcopy(H5T_C_S1);
  H5Tset_size(vstr, H5T_VARIABLE);
  H5Tset_cset(vstr, H5T_CSET_UTF8);  // h5py's str dtype
  h5_write(g, "type_map.raw", vstr, vstr, {2}, names);
  H5Tclose(vstr);
  const std::int8_t yes = 1;
  h5_write(g, "nopbc", H5T_STD_I8LE, H5T_NATIVE_INT8, {}, &yes);
  const hid_t set = H5Gcreate2(g, "set.000", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const auto n = static_cast<hsize_t>(a.nframes);
  std::vector<float> coord(a.coord.begin(), a.coord.end()), force(a.force.begin(), a.force.end());
  h5_write(set, "coord.npy", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {n, 12}, coord.data());
  h5_write(set, "force.npy", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {n, 12}, force.data());
  h5_write(set, "energy.npy", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n, 1}, a.energy.data());
  H5Gclose(set);
  H5Gclose(g);
  H5Pclose(lcpl);
}

}  // namespace

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

TEST_CASE("hdf5 files written like dpdata: nested groups, variable-length utf-8 names, float32, #group",
          "[data][hdf5]") {
  const std::string dir = make_temp_dir("h5-dpdata");
  const std::string file = dir + "/multi.h5";
  const SyntheticArrays mol(4), bulk(3);
  {
    const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(f >= 0);
    write_dpdata_like_group(f, "/molecules/H2O2", mol);
    H5Fclose(f);
  }
  // A periodic system in a second group by our writer (fixed-length names, float64).
  System b = read_npy_system([&] {
    write_synthetic_system(dir + "/bulk", bulk, true);
    return dir + "/bulk";
  }());
  {
    const std::string file2 = dir + "/bulk.h5";
    deepkf::write_hdf5_systems(file2, {b}, {"bulk"});
    const auto back = read_hdf5_systems(file2);
    REQUIRE(back.size() == 1);
    require_same_system(back[0], b);
    CHECK(back[0].source == file2 + "#/bulk");
  }

  const auto all = read_hdf5_systems(file);
  REQUIRE(all.size() == 1);
  const System& m = all[0];
  CHECK(m.source == file + "#/molecules/H2O2");
  CHECK_FALSE(m.periodic);
  CHECK(m.type_map == std::vector<std::string>{"O", "H"});
  CHECK(m.atom_types == std::vector<int>{0, 1, 1, 0});
  CHECK(m.energy == mol.energy);
  for (std::size_t i = 0; i < mol.coord.size(); ++i)
    CHECK(m.coord[i] == static_cast<double>(static_cast<float>(mol.coord[i])));
  CHECK(read_hdf5_systems(file + "#molecules").size() == 1);
  CHECK(read_hdf5_systems(file + "#/molecules/H2O2/").size() == 1);
  CHECK_THROWS_WITH(read_hdf5_systems(file + "#/nothing"), Contains(file) && Contains("no group /nothing"));
  fs::remove_all(dir);
}

TEST_CASE("hdf5 reader: missing, truncated and non-hdf5 files and bad content", "[data][hdf5][errors]") {
  const std::string dir = make_temp_dir("h5-bad");
  const SyntheticArrays a(40);
  write_synthetic_system(dir + "/sys", a, true);
  const System s = read_npy_system(dir + "/sys");
  const std::string good = dir + "/good.h5";
  deepkf::write_hdf5_systems(good, {s, s}, {"one", "deep/two"});
  REQUIRE(read_hdf5_systems(good).size() == 2);

  CHECK_THROWS_WITH(read_hdf5_systems(dir + "/absent.h5"), Contains("absent.h5") && Contains("no such file"));
  write_text(dir + "/text.h5", "this is not hdf5\n");
  CHECK_THROWS_WITH(read_hdf5_systems(dir + "/text.h5"), Contains("text.h5") && Contains("not an hdf5 file"));

  // Truncations at several points: every one must give a DataError naming the file, never a crash or a
  // partial result.
  const auto size = fs::file_size(good);
  for (double keep : {0.9, 0.6, 0.3, 0.05}) {
    const std::string cut = dir + "/cut.h5";
    fs::copy_file(good, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, static_cast<std::uintmax_t>(keep * static_cast<double>(size)));
    INFO("kept " << keep << " of " << size << " bytes");
    CHECK_THROWS_AS(read_hdf5_systems(cut), DataError);
    CHECK_THROWS_WITH(read_hdf5_systems(cut), Contains("cut.h5"));
  }

  // Content errors go through the same checks as npy folders, named by file#group.
  {
    const std::string bad = dir + "/bad.h5";
    const hid_t f = H5Fcreate(bad.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    SyntheticArrays m(4);
    write_dpdata_like_group(f, "/sys", m);
    const hid_t set = H5Gopen2(f, "/sys/set.000", H5P_DEFAULT);
    H5Ldelete(set, "energy.npy", H5P_DEFAULT);
    h5_write(set, "energy.npy", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {3}, m.energy.data());
    H5Gclose(set);
    H5Fclose(f);
    CHECK_THROWS_WITH(read_hdf5_systems(bad),
                      Contains("energy.npy in " + bad + "#/sys/set.000 has 3 rows, coord.npy has 4"));
  }
  {
    const std::string notype = dir + "/notype.h5";
    const hid_t f = H5Fcreate(notype.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "/empty", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Fclose(f);
    CHECK_THROWS_WITH(read_hdf5_systems(notype), Contains(notype) && Contains("no system"));
  }
  fs::remove_all(dir);
}

TEST_CASE("extended xyz: properties, stress sign, grouping by species and pbc", "[data][extxyz]") {
  const std::string dir = make_temp_dir("xyz");
  const std::string file = dir + "/frames.xyz";
  // Frame 1 and 3: O H H periodic in a 5 x 6 x 7 box (volume 210), frame 2: H O H (other order),
  // frame 4: O H H without a Lattice (non-periodic). Extra columns (a charge, Z) are ignored.
  write_text(
      file,
      "3\n"
      "Lattice=\"5.0 0.0 0.0 0.0 6.0 0.0 0.0 0.0 7.0\" Properties=species:S:1:pos:R:3:Z:I:1:forces:R:3 "
      "energy=-10.5 stress=\"0.01 0 0 0 0.02 0 0 0 0.03\" free_energy=-10.6 pbc=\"T T T\"\n"
      "O 0.0 0.0 0.0 8 0.1 0.2 0.3\n"
      "H 0.9 0.0 0.0 1 -0.1 0.0 0.0\n"
      "H 0.0 0.9 0.0 1 0.0 -0.2 -0.3\n"
      "3\n"
      "Properties=species:S:1:pos:R:3:force:R:3 Lattice=\"5 0 0 0 6 0 0 0 7\" energy=-11\n"
      "H 1 1 1 0.5 0 0\n"
      "O 2 2 2 -0.5 0 0\n"
      "H 3 3 3 0 0 0\n"
      "\n"
      "3\n"
      "lattice=\"5.0 0.0 0.0 0.0 6.0 0.0 0.0 0.0 7.0\" Properties=species:S:1:pos:R:3:Z:I:1:forces:R:3 "
      "energy=-10.25 stress=\"0.01 0.002 0.001 0.02 0.03 0.004\"\n"
      "O 0.1 0.0 0.0 8 1 2 3\n"
      "H 1.0 0.0 0.0 1 -1 0 0\n"
      "H 0.1 0.9 0.0 1 0 -2 -3\n"
      "3\n"
      "Properties=species:S:1:pos:R:3:forces:R:3 energy=-9.0 pbc=\"F F F\"\n"
      "O 0 0 0 1 1 1\n"
      "H 1 0 0 2 2 2\n"
      "H 0 1 0 3 3 3\n");
  const auto systems = deepkf::read_extxyz(file);
  REQUIRE(systems.size() == 3);
  const System& w = systems[0];
  CHECK(w.source == file + ":O1H2");
  CHECK(w.nframes == 2);
  CHECK(w.periodic);
  CHECK(w.type_map == std::vector<std::string>{"O", "H"});
  CHECK(w.atom_types == std::vector<int>{0, 1, 1});
  CHECK(w.energy == std::vector<double>{-10.5, -10.25});
  CHECK(w.coord[3] == 0.9);
  CHECK(w.coord[9 + 0] == 0.1);
  CHECK(w.force[8] == -0.3);
  CHECK(w.force[9 + 1] == 2.0);
  REQUIRE(w.virial.size() == 18);
  // virial = -stress * V with V = 210: frame 1 is diagonal (-2.1, -4.2, -6.3); frame 2 is Voigt
  // (xx yy zz yz xz xy) = (0.01, 0.002, 0.001, 0.02, 0.03, 0.004).
  CHECK(w.virial[0] == Approx(-2.1));
  CHECK(w.virial[4] == Approx(-4.2));
  CHECK(w.virial[8] == Approx(-6.3));
  CHECK(w.virial[1] == 0.0);
  CHECK(w.virial[9 + 0] == Approx(-0.01 * 210));
  CHECK(w.virial[9 + 4] == Approx(-0.002 * 210));
  CHECK(w.virial[9 + 1] == Approx(-0.004 * 210));  // xy
  CHECK(w.virial[9 + 2] == Approx(-0.03 * 210));   // xz
  CHECK(w.virial[9 + 5] == Approx(-0.02 * 210));   // yz
  CHECK(w.virial[9 + 7] == Approx(-0.02 * 210));   // zy
  CHECK(w.box[4] == 6.0);

  const System& h = systems[1];
  CHECK(h.source == file + ":H2O1");
  CHECK(h.type_map == std::vector<std::string>{"H", "O"});
  CHECK(h.atom_types == std::vector<int>{0, 1, 0});
  CHECK(h.force[0] == 0.5);
  CHECK_FALSE(h.has_virial());

  const System& m = systems[2];
  CHECK_FALSE(m.periodic);
  CHECK(m.box.empty());
  CHECK(m.source == file + ":O1H2_nopbc_2");
  CHECK(m.energy == std::vector<double>{-9.0});

  // extxyz -> h5 -> read gives the same systems.
  deepkf::write_hdf5_systems(dir + "/frames.h5", systems,
                             {"frames/O1H2", "frames/H2O1", "frames/O1H2_nopbc"});
  const auto back = read_hdf5_systems(dir + "/frames.h5");
  REQUIRE(back.size() == 3);
  require_same_system(back[0], systems[1]);  // name order: H2O1, O1H2, O1H2_nopbc
  require_same_system(back[1], systems[0]);
  require_same_system(back[2], systems[2]);
  fs::remove_all(dir);
}

TEST_CASE("extended xyz labels under MACE's and GAP's names", "[data][extxyz]") {
  const std::string dir = make_temp_dir("xyz-names");
  const std::string file = dir + "/frames.xyz";
  // Frame 1, GAP style: dft_energy, dft_virial (eV), a dft_force column beside a model's forces column
  // of another name. Frame 2, MACE style: REF_energy, REF_stress (Voigt), REF_forces, and the model's own
  // MACE_energy / MACE_forces that must not be taken. Frame 3: both energy and REF_energy: energy wins.
  write_text(file,
             "2\n"
             "Lattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3:gap_force:R:3:dft_force:R:3 "
             "config_type=bulk dft_energy=-10.5 dft_virial=\"1 0 0 0 2 0 0 0 3\" gap_energy=-10.4\n"
             "Si 0 0 0 9 9 9 0.1 0.2 0.3\n"
             "Si 2 2 2 9 9 9 -0.1 -0.2 -0.3\n"
             "2\n"
             "Lattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3:MACE_forces:R:3:REF_forces:R:3 "
             "MACE_energy=-99 REF_energy=-11.5 REF_stress=\"0.01 0.02 0.03 0 0 0\"\n"
             "Si 0 0 0 9 9 9 1 2 3\n"
             "Si 2 2 2.1 9 9 9 -1 -2 -3\n"
             "2\n"
             "Lattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3:forces:R:3 "
             "energy=-12.5 REF_energy=-99 virial=\"0 0 0 0 0 0 0 0 0\"\n"
             "Si 0 0 0 0 0 0\n"
             "Si 2 2 2.2 0 0 0\n");
  const auto systems = deepkf::read_extxyz(file);
  REQUIRE(systems.size() == 1);
  const System& s = systems[0];
  CHECK(s.energy == std::vector<double>{-10.5, -11.5, -12.5});
  CHECK(s.force[0] == 0.1);       // dft_force, not gap_force
  CHECK(s.force[6 + 3] == -1.0);  // REF_forces, not MACE_forces
  REQUIRE(s.virial.size() == 27);
  CHECK(s.virial[4] == 2.0);                     // dft_virial as given
  CHECK(s.virial[9 + 4] == Approx(-0.02 * 64));  // -REF_stress * V
  fs::remove_all(dir);
}

TEST_CASE("extended xyz errors name the file and line", "[data][extxyz][errors]") {
  const std::string dir = make_temp_dir("xyz-bad");
  const std::string file = dir + "/bad.xyz";
  const std::string head =
      "2\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:pos:R:3:forces:R:3 energy=-1\nH 0 0 0 0 0 0\n";
  write_text(file, head + "H 1 0 0 0.1 0.2\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file),
                    Contains(file + " line 4") && Contains("6 columns") && Contains("needs 7"));
  write_text(file, head + "H 1 0 nan 0 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 4") && Contains("non-finite"));
  write_text(file, head + "H 1 0 x 0 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 4") && Contains("'x'"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:pos:R:3\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 2") && Contains("no energy"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 -5\" energy=-1\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 2") && Contains("left-handed"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1 pbc=\"T T F\"\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 2") && Contains("partial periodicity"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1\nH 0 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 4") && Contains("1 of 2 atom lines"));
  write_text(file, "two\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 1") && Contains("'two'"));
  write_text(file, head + "H 1 0 0 0 0 0\n2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-2\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file),
                    Contains(file) && Contains("line 5 lacks forces") && Contains("line 1"));
  fs::remove_all(dir);
}
