#include "src/data/DeepmdNpy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/Error.hpp"
#include "src/data/DeepmdLayout.hpp"
#include "src/data/NpyFile.hpp"

namespace fs = std::filesystem;

namespace deepkf {

namespace {

std::vector<std::string> read_words(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw DataError(fmt::format("cannot read {}", path.string()));
  std::vector<std::string> words;
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

// One .npy file of a set: the header is read when the system is opened, rows when frames are read.
class NpyArraySource final : public ArraySource {
 public:
  explicit NpyArraySource(const std::string& path) : header_(read_npy_header(path)) {}
  const std::vector<std::int64_t>& shape() const override { return header_.shape; }
  void read_rows(std::int64_t first, std::int64_t count, double* out) const override {
    read_npy_rows(header_, first, count, out);
  }

 private:
  NpyHeader header_;
};

std::shared_ptr<const ArraySource> open_optional(const fs::path& path) {
  if (!fs::exists(path)) return nullptr;
  return std::make_shared<NpyArraySource>(path.string());
}

}  // namespace

bool is_npy_system(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::is_regular_file(fs::path(dir) / "type.raw", ec);
}

std::vector<std::shared_ptr<FrameSource>> open_npy_systems(const std::string& dir) {
  const fs::path root(dir);
  SystemLayout raw;
  raw.source = root.lexically_normal().string();
  while (raw.source.size() > 1 && raw.source.back() == '/') raw.source.pop_back();
  if (!fs::is_directory(root)) throw DataError(fmt::format("{} is not a directory", dir));
  if (fs::exists(root / "type.raw")) {
    raw.has_types = true;
    const auto words = read_words(root / "type.raw");
    for (std::size_t i = 0; i < words.size(); ++i) {
      std::size_t used = 0;
      long long t = 0;
      try {
        t = std::stoll(words[i], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != words[i].size())
        throw DataError(
            fmt::format("type.raw in {} has a non-integer entry '{}' at atom {}", raw.source, words[i], i));
      raw.types.push_back(t);
    }
  }
  if (fs::exists(root / "type_map.raw")) raw.type_map = read_words(root / "type_map.raw");
  raw.periodic = !fs::exists(root / "nopbc");

  std::vector<fs::path> set_dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && e.path().filename().string().rfind("set.", 0) == 0) set_dirs.push_back(e.path());
  std::sort(set_dirs.begin(), set_dirs.end());
  for (const auto& sd : set_dirs) {
    SetLayout set;
    set.where = raw.source + "/" + sd.filename().string();
    set.coord = open_optional(sd / "coord.npy");
    set.box = open_optional(sd / "box.npy");
    set.energy = open_optional(sd / "energy.npy");
    set.force = open_optional(sd / "force.npy");
    set.virial = open_optional(sd / "virial.npy");
    set.real_types = open_optional(sd / "real_atom_types.npy");
    raw.sets.push_back(std::move(set));
  }
  return open_layout_systems(std::move(raw));
}

std::shared_ptr<FrameSource> open_npy_system(const std::string& dir) {
  auto systems = open_npy_systems(dir);
  if (systems.size() != 1)
    throw DataError(fmt::format("{} holds {} systems in DeePMD-kit's type_mix format, where one was expected",
                                dir, systems.size()));
  return std::move(systems[0]);
}

void write_npy_system(const std::string& dir, const System& system, std::int64_t set_size) {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw DataError(fmt::format("cannot create {}: {}", dir, ec.message()));
  {
    std::ofstream out(root / "type.raw");
    for (int t : system.atom_types) out << t << '\n';
    std::ofstream map(root / "type_map.raw");
    for (const auto& name : system.type_map) map << name << '\n';
    if (!out || !map) throw DataError(fmt::format("cannot write type.raw/type_map.raw in {}", dir));
  }
  if (!system.periodic) std::ofstream(root / "nopbc").flush();
  for (RawSet& set : split_into_sets(system, set_size)) {
    const fs::path sd = root / fs::path(set.where).filename();
    fs::create_directories(sd, ec);
    if (ec) throw DataError(fmt::format("cannot create {}: {}", sd.string(), ec.message()));
    auto put = [&](const char* name, const RawArray& a) {
      if (a.present) write_npy((sd / name).string(), a.shape, a.data.data());
    };
    put("coord.npy", set.coord);
    put("box.npy", set.box);
    put("energy.npy", set.energy);
    put("force.npy", set.force);
    put("virial.npy", set.virial);
  }
}

}  // namespace deepkf
