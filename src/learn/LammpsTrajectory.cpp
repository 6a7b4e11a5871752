#include "src/learn/LammpsTrajectory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

#include "src/core/Error.hpp"

namespace deepkf {
namespace {

struct LineReader {
  std::ifstream in;
  std::string path;
  std::int64_t number = 0;
  std::string line;

  bool torn = false;  // the file ends inside its last line (no newline): a write cut short

  bool next() {
    if (!std::getline(in, line)) return false;
    ++number;
    if (in.eof()) {  // getline reached the end before a newline
      torn = true;
      return false;
    }
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(fmt::format("{} line {}: {}", path, number, what));
  }
  std::vector<std::string> words() const {
    std::istringstream s(line);
    std::vector<std::string> out;
    for (std::string w; s >> w;) out.push_back(w);
    return out;
  }
  double number_of(const std::string& word) const {
    double v = 0.0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size()) fail("'" + word + "' is not a number");
    return v;
  }
  std::int64_t integer_of(const std::string& word) const {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size()) fail("'" + word + "' is not an integer");
    return v;
  }
};

// Box rows from LAMMPS's dump bounds: the bounds of a triclinic box enclose the tilted cell, so the tilts
// are taken off: xlo = xlo_bound - min(0, xy, xz, xy + xz), xhi = xhi_bound - max(0, xy, xz, xy + xz),
// ylo = ylo_bound - min(0, yz), yhi = yhi_bound - max(0, yz).
std::array<double, 12> box_from_bounds(const double bounds[3][3], bool triclinic) {
  const double xy = triclinic ? bounds[0][2] : 0.0, xz = triclinic ? bounds[1][2] : 0.0,
               yz = triclinic ? bounds[2][2] : 0.0;
  const double xlo = bounds[0][0] - std::min({0.0, xy, xz, xy + xz});
  const double xhi = bounds[0][1] - std::max({0.0, xy, xz, xy + xz});
  const double ylo = bounds[1][0] - std::min(0.0, yz);
  const double yhi = bounds[1][1] - std::max(0.0, yz);
  const double zlo = bounds[2][0], zhi = bounds[2][1];
  return {xhi - xlo, 0, 0, xy, yhi - ylo, 0, xz, yz, zhi - zlo, xlo, ylo, zlo};
}

}  // namespace

ExploredFrames read_explored_frames(const std::string& path, const std::vector<std::string>& elements) {
  LineReader r;
  r.path = path;
  r.in.open(path);
  if (!r.in) throw DataError("cannot open LAMMPS dump " + path);
  ExploredFrames t;
  System& s = t.frames;
  s.source = path;
  s.type_map = elements;
  s.periodic = true;
  std::vector<int> first_types;  // per atom ID order, of the first frame
  const auto cut = [&] {         // the file ends inside a frame: keep the complete ones
    t.truncated = true;
    return t;
  };
  while (r.next()) {
    if (r.line.rfind("ITEM: TIMESTEP", 0) != 0) r.fail("expected 'ITEM: TIMESTEP', found '" + r.line + "'");
    // A frame: timestep, atom count, box, atoms. The file may end anywhere in the last one.
    if (!r.next()) return cut();
    const std::int64_t step = r.integer_of(r.words().empty() ? "" : r.words()[0]);
    if (!r.next()) return cut();
    if (r.line.rfind("ITEM: NUMBER OF ATOMS", 0) != 0) r.fail("expected 'ITEM: NUMBER OF ATOMS'");
    if (!r.next()) return cut();
    const std::int64_t natoms = r.integer_of(r.words().empty() ? "" : r.words()[0]);
    if (natoms < 1) r.fail("a frame without atoms");
    if (!r.next()) return cut();
    if (r.line.rfind("ITEM: BOX BOUNDS", 0) != 0) r.fail("expected 'ITEM: BOX BOUNDS'");
    const bool triclinic = r.line.find("xy") != std::string::npos;
    if (std::count(r.line.begin(), r.line.end(), 'p') < 6) r.fail("the box is not periodic in x, y and z");
    double bounds[3][3] = {};
    for (int d = 0; d < 3; ++d) {
      if (!r.next()) return cut();
      const auto w = r.words();
      if (w.size() != (triclinic ? 3u : 2u)) r.fail("expected the box bounds of one direction");
      for (std::size_t k = 0; k < w.size(); ++k) bounds[d][k] = r.number_of(w[k]);
    }
    const auto box = box_from_bounds(bounds, triclinic);
    if (!r.next()) return cut();
    if (r.line.rfind("ITEM: ATOMS", 0) != 0) r.fail("expected 'ITEM: ATOMS'");
    const auto columns = r.words();  // ITEM: ATOMS id type x y z
    const auto column = [&](const std::string& name) {
      const auto it = std::find(columns.begin() + 2, columns.end(), name);
      if (it == columns.end()) r.fail("the dump has no '" + name + "' column (needs id, type, x, y, z)");
      return static_cast<std::size_t>(it - columns.begin() - 2);
    };
    const std::size_t cid = column("id"), ctype = column("type"), cx = column("x"), cy = column("y"),
                      cz = column("z");
    std::vector<std::array<double, 5>> atoms;  // id, type, x, y, z
    for (std::int64_t i = 0; i < natoms; ++i) {
      if (!r.next()) return cut();
      const auto w = r.words();
      if (w.size() != columns.size() - 2) r.fail(fmt::format("expected {} columns", columns.size() - 2));
      const std::int64_t id = r.integer_of(w[cid]), type = r.integer_of(w[ctype]);
      if (type < 1 || type > static_cast<std::int64_t>(elements.size()))
        r.fail(
            fmt::format("atom {} has type {}, outside the {} types of the run", id, type, elements.size()));
      atoms.push_back({static_cast<double>(id), static_cast<double>(type), r.number_of(w[cx]),
                       r.number_of(w[cy]), r.number_of(w[cz])});
    }
    std::sort(atoms.begin(), atoms.end(), [](const auto& a, const auto& b) { return a[0] < b[0]; });
    std::vector<int> types;
    for (const auto& a : atoms) types.push_back(static_cast<int>(a[1]) - 1);
    if (s.nframes == 0) {
      first_types = types;
      s.atom_types = types;
      s.natoms = natoms;
    } else if (types != first_types) {
      r.fail(fmt::format("frame at step {} has other atoms or types than the first frame", step));
    }
    for (const auto& a : atoms)
      for (int d = 0; d < 3; ++d) s.coord.push_back(a[2 + d] - box[9 + d]);  // relative to the box origin
    s.box.insert(s.box.end(), box.begin(), box.begin() + 9);
    t.steps.push_back(step);
    ++s.nframes;
  }
  if (r.torn) return cut();
  return t;
}

}  // namespace deepkf
