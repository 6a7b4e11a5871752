// Writing the deepmd/hdf5 layout (src/data/DeepmdHdf5.hpp).
#include <fmt/format.h>
#include <hdf5.h>

#include <algorithm>
#include <filesystem>

#include "src/core/Error.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdLayout.hpp"
#include "src/data/Hdf5Handle.hpp"

namespace fs = std::filesystem;

namespace deepkf {

namespace {

// Writing context.
struct Writer {
  std::string file;

  void check(herr_t status, const std::string& what) const {
    if (status < 0) throw DataError(fmt::format("cannot write {} in {} (hdf5 error)", what, file));
  }

  void write_doubles(hid_t g, const char* name, const RawArray& a) const {
    if (!a.present) return;
    std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
    Hdf5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    Hdf5Handle ds(H5Dcreate2(g, name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose);
    if (!ds.ok()) check(-1, name);
    check(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()), name);
  }

  // A fixed-length text attribute (the length of `value`, at least 1).
  void write_text_attribute(hid_t object, const std::string& name, const std::string& value) const {
    Hdf5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), std::max<std::size_t>(1, value.size()));
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
    Hdf5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Hdf5Handle a(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                 H5Aclose);
    if (!a.ok()) check(-1, "attribute " + name);
    std::string padded = value;
    padded.resize(std::max<std::size_t>(1, value.size()), '\0');
    check(H5Awrite(a.get(), type.get(), padded.data()), "attribute " + name);
  }

  void write_system(hid_t file_id, const System& s, const std::string& group) const {
    Hdf5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    Hdf5Handle g(H5Gcreate2(file_id, group.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g.ok()) check(-1, "group " + group);

    // type.raw: int64 (natoms)
    const hsize_t natoms = static_cast<hsize_t>(s.natoms);
    std::vector<std::int64_t> types(s.atom_types.begin(), s.atom_types.end());
    Hdf5Handle tspace(H5Screate_simple(1, &natoms, nullptr), H5Sclose);
    Hdf5Handle tds(
        H5Dcreate2(g.get(), "type.raw", H5T_STD_I64LE, tspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Dclose);
    if (!tds.ok()) check(-1, group + "/type.raw");
    check(H5Dwrite(tds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, types.data()),
          group + "/type.raw");

    // type_map.raw: fixed-length byte strings, as numpy's dtype "S" gives.
    std::size_t len = 1;
    for (const auto& name : s.type_map) len = std::max(len, name.size());
    std::vector<char> buf(s.type_map.size() * len, '\0');
    for (std::size_t i = 0; i < s.type_map.size(); ++i)
      std::copy(s.type_map[i].begin(), s.type_map[i].end(), buf.begin() + i * len);
    const hsize_t ntypes = s.type_map.size();
    Hdf5Handle stype(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(stype.get(), len);
    H5Tset_strpad(stype.get(), H5T_STR_NULLPAD);
    Hdf5Handle mspace(H5Screate_simple(1, &ntypes, nullptr), H5Sclose);
    Hdf5Handle mds(
        H5Dcreate2(g.get(), "type_map.raw", stype.get(), mspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Dclose);
    if (!mds.ok()) check(-1, group + "/type_map.raw");
    check(H5Dwrite(mds.get(), stype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
          group + "/type_map.raw");

    if (!s.periodic) {
      Hdf5Handle nspace(H5Screate(H5S_SCALAR), H5Sclose);
      Hdf5Handle nds(
          H5Dcreate2(g.get(), "nopbc", H5T_STD_I8LE, nspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
      const std::int8_t one = 1;
      if (!nds.ok()) check(-1, group + "/nopbc");
      check(H5Dwrite(nds.get(), H5T_NATIVE_INT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one), group + "/nopbc");
    }
  }
};

}  // namespace

void write_hdf5_systems(const std::string& path, const std::vector<System>& systems,
                        const std::vector<std::string>& group_names, std::int64_t set_size,
                        const std::vector<std::map<std::string, std::string>>& attributes) {
  silence_hdf5();
  if (systems.size() != group_names.size())
    throw DataError(
        fmt::format("write_hdf5_systems: {} systems but {} group names", systems.size(), group_names.size()));
  Hdf5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) throw DataError(fmt::format("cannot create hdf5 file {}", path));
  Writer w{path};
  for (std::size_t i = 0; i < systems.size(); ++i) {
    const System& s = systems[i];
    const std::string& group = group_names[i];
    w.write_system(f.get(), s, group);
    for (const RawSet& set : split_into_sets(s, set_size)) {
      const std::string spath = group + "/" + fs::path(set.where).filename().string();
      Hdf5Handle g(H5Gcreate2(f.get(), spath.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      if (!g.ok()) w.check(-1, "group " + spath);
      w.write_doubles(g.get(), "coord.npy", set.coord);
      w.write_doubles(g.get(), "box.npy", set.box);
      w.write_doubles(g.get(), "energy.npy", set.energy);
      w.write_doubles(g.get(), "force.npy", set.force);
      w.write_doubles(g.get(), "virial.npy", set.virial);
    }
    if (i < attributes.size()) {
      Hdf5Handle g(H5Gopen2(f.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
      if (!g.ok()) w.check(-1, "group " + group);
      for (const auto& [name, value] : attributes[i]) w.write_text_attribute(g.get(), name, value);
    }
  }
  if (H5Fflush(f.get(), H5F_SCOPE_GLOBAL) < 0) throw DataError(fmt::format("cannot flush {}", path));
}

}  // namespace deepkf
