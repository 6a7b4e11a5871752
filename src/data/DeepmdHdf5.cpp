#include "src/data/DeepmdHdf5.hpp"

#include <fmt/format.h>
#include <hdf5.h>

#include <algorithm>
#include <filesystem>

#include "src/core/Error.hpp"
#include "src/data/DeepmdLayout.hpp"
#include "src/data/Hdf5Handle.hpp"

namespace fs = std::filesystem;

namespace deepkf {

namespace {

// Reading context: the file name for messages.
struct Reader {
  std::string file;

  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw DataError(
        fmt::format("{}: cannot read {} ({}); the file may be truncated or corrupt", file, object, what));
  }

  bool exists(hid_t group, const char* name) const {
    const htri_t e = H5Lexists(group, name, H5P_DEFAULT);
    if (e < 0) fail(name, "link lookup failed");
    return e > 0;
  }

  // A 1-d (or scalar) dataset of fixed- or variable-length strings.
  std::vector<std::string> read_strings(hid_t group, const std::string& gpath, const char* name) const {
    const std::string object = gpath + "/" + name;
    Hdf5Handle ds(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) fail(object, "not a dataset");
    Hdf5Handle type(H5Dget_type(ds.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING)
      throw DataError(fmt::format("{}: dataset {} does not hold strings", file, object));
    Hdf5Handle space(H5Dget_space(ds.get()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) fail(object, "bad dataspace");
    std::vector<std::string> out;
    if (n == 0) return out;
    if (H5Tis_variable_str(type.get()) > 0) {
      // Same character set as the file (h5py writes UTF-8): HDF5 does not convert between sets.
      Hdf5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      std::vector<char*> ptrs(static_cast<std::size_t>(n), nullptr);
      if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
        fail(object, "H5Dread failed");
      for (char* p : ptrs) out.emplace_back(p ? p : "");
      H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
    } else {
      // Fixed length: read the bytes as stored (null-padded, null-terminated or space-padded).
      const std::size_t len = H5Tget_size(type.get());
      std::vector<char> buf(static_cast<std::size_t>(n) * len);
      if (H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
        fail(object, "H5Dread failed");
      for (hssize_t i = 0; i < n; ++i) {
        std::string s(buf.data() + i * len, len);
        s = s.substr(0, s.find('\0'));
        while (!s.empty() && s.back() == ' ') s.pop_back();
        out.push_back(s);
      }
    }
    return out;
  }

  // Names of the links in `group`, in name order.
  std::vector<std::string> children(hid_t group, const std::string& gpath) const {
    H5G_info_t info;
    if (H5Gget_info(group, &info) < 0) fail(gpath, "cannot list the group");
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      const ssize_t len =
          H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (len < 0) fail(gpath, "cannot list the group");
      std::string name(static_cast<std::size_t>(len) + 1, '\0');
      H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
      name.resize(static_cast<std::size_t>(len));
      names.push_back(name);
    }
    return names;
  }

  bool is_group(hid_t parent, const std::string& name) const {
    Hdf5Handle obj(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose);
    return obj.ok() && H5Iget_type(obj.get()) == H5I_GROUP;
  }

  std::vector<std::shared_ptr<FrameSource>> open_system(hid_t g, const std::string& gpath) const {
    SystemLayout raw;
    raw.source = file + "#" + (gpath.empty() ? "/" : gpath);
    if (const auto types = open_array(g, gpath, "type.raw")) {
      raw.has_types = true;
      // The whole array (natoms values): all of its rows.
      std::int64_t n = 1;
      for (auto d : types->shape()) n *= d;
      std::vector<double> values(static_cast<std::size_t>(n));
      if (n > 0) types->read_rows(0, types->shape().empty() ? 1 : types->shape()[0], values.data());
      raw.types.assign(values.begin(), values.end());
    }
    if (exists(g, "type_map.raw")) raw.type_map = read_strings(g, gpath, "type_map.raw");
    raw.periodic = !exists(g, "nopbc");
    for (const std::string& name : children(g, gpath)) {
      if (name.rfind("set.", 0) != 0 || !is_group(g, name)) continue;
      Hdf5Handle set(H5Gopen2(g, name.c_str(), H5P_DEFAULT), H5Gclose);
      if (!set.ok()) fail(gpath + "/" + name, "cannot open the group");
      const std::string spath = gpath + "/" + name;
      SetLayout rs;
      rs.where = file + "#" + spath;
      rs.coord = open_array(set.get(), spath, "coord.npy");
      rs.box = open_array(set.get(), spath, "box.npy");
      rs.energy = open_array(set.get(), spath, "energy.npy");
      rs.force = open_array(set.get(), spath, "force.npy");
      rs.virial = open_array(set.get(), spath, "virial.npy");
      rs.real_types = open_array(set.get(), spath, "real_atom_types.npy");
      raw.sets.push_back(std::move(rs));
    }
    return open_layout_systems(std::move(raw));
  }

  // A numeric dataset (a frame array or type.raw), kept open; null when absent.
  std::shared_ptr<const ArraySource> open_array(hid_t group, const std::string& gpath,
                                                const char* name) const;

  void collect(hid_t g, const std::string& gpath, std::vector<std::shared_ptr<FrameSource>>& out) const {
    if (exists(g, "type.raw")) {
      for (auto& s : open_system(g, gpath)) out.push_back(std::move(s));
      return;
    }
    const std::vector<std::string> names = children(g, gpath);
    // Frames without atom types cannot be read: say so rather than skip them (a group without set.* is
    // simply not a system).
    for (const std::string& name : names) {
      if (name.rfind("set.", 0) == 0 && is_group(g, name))
        throw DataError(
            fmt::format("{}#{} holds frames ({}) but no type.raw, so its atoms have no types; "
                        "add type.raw (and type_map.raw) to the group or remove the group",
                        file, gpath.empty() ? "/" : gpath, name));
    }
    for (const std::string& name : names) {
      if (!is_group(g, name)) continue;
      Hdf5Handle child(H5Gopen2(g, name.c_str(), H5P_DEFAULT), H5Gclose);
      if (!child.ok()) fail(gpath + "/" + name, "cannot open the group");
      collect(child.get(), gpath + "/" + name, out);
    }
  }
};

// One dataset of a set, open for the life of the source (an open dataset keeps its file open); rows are read
// with a hyperslab selection, converted to double by HDF5.
class Hdf5ArraySource final : public ArraySource {
 public:
  Hdf5ArraySource(const Reader& reader, hid_t group, const std::string& object, const char* name)
      : file_(reader.file), object_(object), ds_(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose) {
    if (!ds_.ok()) reader.fail(object, "not a dataset");
    Hdf5Handle type(H5Dget_type(ds_.get()), H5Tclose);
    const H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_FLOAT && cls != H5T_INTEGER && cls != H5T_ENUM)
      throw DataError(fmt::format("{}: dataset {} is not numeric", file_, object));
    Hdf5Handle space(H5Dget_space(ds_.get()), H5Sclose);
    const int ndims = H5Sget_simple_extent_ndims(space.get());
    if (ndims < 0) reader.fail(object, "bad dataspace");
    dims_.resize(static_cast<std::size_t>(ndims));
    if (ndims > 0) H5Sget_simple_extent_dims(space.get(), dims_.data(), nullptr);
    shape_.assign(dims_.begin(), dims_.end());
  }

  const std::vector<std::int64_t>& shape() const override { return shape_; }

  void read_rows(std::int64_t first, std::int64_t count, double* out) const override {
    if (count == 0) return;
    if (dims_.empty()) {  // a scalar: its one value
      if (H5Dread(ds_.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) fail_read();
      return;
    }
    Hdf5Handle space(H5Dget_space(ds_.get()), H5Sclose);
    std::vector<hsize_t> start(dims_.size(), 0), block = dims_;
    start[0] = static_cast<hsize_t>(first);
    block[0] = static_cast<hsize_t>(count);
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr) < 0)
      fail_read();
    hsize_t n = 1;
    for (auto b : block) n *= b;
    Hdf5Handle mem(H5Screate_simple(1, &n, nullptr), H5Sclose);
    if (H5Dread(ds_.get(), H5T_NATIVE_DOUBLE, mem.get(), space.get(), H5P_DEFAULT, out) < 0) fail_read();
  }

 private:
  [[noreturn]] void fail_read() const {
    throw DataError(fmt::format("{}: cannot read {} (H5Dread failed); the file may be truncated or corrupt",
                                file_, object_));
  }

  std::string file_;
  std::string object_;
  Hdf5Handle ds_;
  std::vector<hsize_t> dims_;
  std::vector<std::int64_t> shape_;
};

std::shared_ptr<const ArraySource> Reader::open_array(hid_t group, const std::string& gpath,
                                                      const char* name) const {
  if (!exists(group, name)) return nullptr;
  return std::make_shared<Hdf5ArraySource>(*this, group, gpath + "/" + name, name);
}

}  // namespace

bool is_hdf5_path(const std::string& path) {
  const std::string file = path.substr(0, path.find('#'));
  const std::string ext = fs::path(file).extension().string();
  return ext == ".h5" || ext == ".hdf5";
}

std::vector<std::shared_ptr<FrameSource>> open_hdf5_systems(const std::string& path) {
  silence_hdf5();
  const std::size_t hash = path.find('#');
  const std::string file = path.substr(0, hash);
  std::string group = hash == std::string::npos ? "" : path.substr(hash + 1);
  while (!group.empty() && group.back() == '/') group.pop_back();
  if (!group.empty() && group.front() != '/') group = "/" + group;

  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw DataError(fmt::format("cannot open {}: no such file", file));
  if (H5Fis_hdf5(file.c_str()) <= 0)
    throw DataError(fmt::format("{} is not an hdf5 file (or its header is corrupt)", file));
  Hdf5Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) throw DataError(fmt::format("cannot open {}: the hdf5 file is truncated or corrupt", file));
  Reader reader{file};

  std::vector<std::shared_ptr<FrameSource>> out;
  if (group.empty()) {
    Hdf5Handle root(H5Gopen2(f.get(), "/", H5P_DEFAULT), H5Gclose);
    if (!root.ok()) reader.fail("/", "cannot open the root group");
    reader.collect(root.get(), "", out);
  } else {
    const htri_t exists = H5Lexists(f.get(), group.c_str(), H5P_DEFAULT);
    if (exists <= 0 || !reader.is_group(f.get(), group))
      throw DataError(fmt::format("{} has no group {}", file, group));
    Hdf5Handle g(H5Gopen2(f.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.ok()) reader.fail(group, "cannot open the group");
    reader.collect(g.get(), group, out);
  }
  if (out.empty())
    throw DataError(fmt::format("{} holds no system (no group with type.raw{})", file,
                                group.empty() ? "" : " under " + group));
  return out;
}

namespace {

// H5Ovisit callback: adds the rows of every dataset named coord.npy whose group is a set.*.
herr_t add_coord_rows(hid_t root, const char* name, const H5O_info_t* info, void* total) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  const fs::path object(name);
  if (object.filename() != "coord.npy" || object.parent_path().filename().string().rfind("set.", 0) != 0)
    return 0;
  Hdf5Handle ds(H5Dopen2(root, name, H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) return -1;
  Hdf5Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int ndims = H5Sget_simple_extent_ndims(space.get());
  if (ndims < 0) return -1;
  std::vector<hsize_t> dims(static_cast<std::size_t>(ndims));
  if (ndims > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  *static_cast<std::int64_t*>(total) += ndims == 0 ? 1 : static_cast<std::int64_t>(dims[0]);
  return 0;
}

}  // namespace

std::int64_t count_hdf5_frames(const std::string& path) {
  silence_hdf5();
  const std::size_t hash = path.find('#');
  const std::string file = path.substr(0, hash);
  const std::string group = hash == std::string::npos ? "/" : "/" + path.substr(hash + 1);
  Hdf5Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) throw DataError(fmt::format("cannot open {}: the hdf5 file is truncated or corrupt", file));
  Hdf5Handle g(H5Oopen(f.get(), group.c_str(), H5P_DEFAULT), H5Oclose);
  if (!g.ok()) throw DataError(fmt::format("{} has no group {}", file, group));
  std::int64_t total = 0;
  if (H5Ovisit2(g.get(), H5_INDEX_NAME, H5_ITER_INC, add_coord_rows, &total, H5O_INFO_BASIC) < 0)
    throw DataError(
        fmt::format("{}: cannot list the objects under {}; the file may be corrupt", file, group));
  return total;
}

std::string read_hdf5_text_attribute(const std::string& path, const std::string& object,
                                     const std::string& name) {
  silence_hdf5();
  Hdf5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.ok())
    throw DataError(fmt::format("cannot open {}: the hdf5 file is missing, truncated or corrupt", path));
  Hdf5Handle o(H5Oopen(f.get(), object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o.ok()) throw DataError(fmt::format("{} has no object {}", path, object));
  if (H5Aexists(o.get(), name.c_str()) <= 0) return "";
  Hdf5Handle a(H5Aopen(o.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  Hdf5Handle type(H5Aget_type(a.get()), H5Tclose);
  if (!a.ok() || !type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    throw DataError(fmt::format("attribute {} of {} in {} is not fixed-length text", name, object, path));
  std::string value(H5Tget_size(type.get()), '\0');
  if (H5Aread(a.get(), type.get(), value.data()) < 0)
    throw DataError(fmt::format("cannot read attribute {} of {} in {}", name, object, path));
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

}  // namespace deepkf
