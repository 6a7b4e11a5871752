// The deepmd/hdf5 layout as dpdata writes it, read and written, and its error messages.
#include <hdf5.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::DataError;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::read_hdf5_systems;
using deepkf::test::read_npy_system;
using deepkf::test::require_same_system;
using deepkf::test::SyntheticArrays;
using deepkf::test::write_synthetic_system;
using deepkf::test::write_text;

namespace {

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
