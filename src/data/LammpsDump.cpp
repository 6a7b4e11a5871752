#include "src/data/LammpsDump.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "src/core/Error.hpp"
#include "src/data/TextFields.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {

namespace {

// Lines of the file with their numbers, for messages "FILE line L: ...".
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), in_(path) {
    if (!in_) throw DataError(fmt::format("cannot open LAMMPS dump {}", path));
  }
  // The next line; false at the end of the file.
  bool next(std::string& line) {
    if (!std::getline(in_, line)) return false;
    ++line_;
    if (in_.eof()) torn_ = true;  // the last line has no newline: its writer was stopped inside it
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }
  // The next line, which `what` needs; DataError when the file ends.
  std::string need(const std::string& what) {
    std::string line;
    if (!next(line)) throw DataError(fmt::format("{} ends at line {} before {}", path_, line_, what));
    return line;
  }
  std::string where() const { return fmt::format("{} line {}", path_, line_); }
  // Whether nothing is left to read but, at most, a last line cut short: a failure now is the file ending
  // inside a snapshot.
  bool at_end() { return torn_ || in_.peek() == std::char_traits<char>::eof(); }
  // Whether the last line read had no newline (its last number may be cut short).
  bool torn() const { return torn_; }

 private:
  bool torn_ = false;
  std::string path_;
  std::ifstream in_;
  std::int64_t line_ = 0;
};

std::int64_t integer(const std::string& s, const std::string& where, const std::string& what) {
  const char* begin = s.c_str();
  char* end = nullptr;
  const long long v = std::strtoll(begin, &end, 10);
  if (end == begin || *end != '\0')
    throw DataError(fmt::format("{}: {} '{}' is not an integer", where, what, s));
  return v;
}

// The cell of a snapshot: rows a, b, c and the origin (A), and whether it is periodic.
struct Box {
  std::array<double, 9> h{};
  std::array<double, 3> origin{};
  bool periodic = true;
};

// "ITEM: BOX BOUNDS [xy xz yz] B1 B2 B3" (`header`, its words after "BOUNDS") and its three lines.
Box read_box(const std::vector<std::string>& header, LineReader& in) {
  const bool triclinic = header.size() >= 3 && header[0] == "xy" && header[1] == "xz" && header[2] == "yz";
  const std::vector<std::string> flags(header.begin() + (triclinic ? 3 : 0), header.end());
  const std::string where = in.where();
  if (flags.size() != 3)
    throw DataError(fmt::format("{}: BOX BOUNDS has {} boundary flags ({}), expected 3 like 'pp pp pp'",
                                where, flags.size(), fmt::join(flags, " ")));
  // A direction is periodic when both of its faces are ("pp"); the model knows all or none.
  int periodic = 0;
  for (const auto& f : flags) periodic += f == "pp" ? 1 : 0;
  if (periodic != 0 && periodic != 3)
    throw DataError(
        fmt::format("{}: boundaries '{}' are periodic in some directions only; deepkf models "
                    "are periodic in all three or in none",
                    where, fmt::join(flags, " ")));
  double lo[3], hi[3], tilt[3] = {0.0, 0.0, 0.0};  // tilt: xy, xz, yz
  for (int d = 0; d < 3; ++d) {
    const std::string line = in.need("the box bounds");
    const auto w = split_words(line);
    if (w.size() != (triclinic ? 3u : 2u))
      throw DataError(fmt::format("{}: box bounds line '{}' has {} numbers, expected {}", in.where(), line,
                                  w.size(), triclinic ? 3 : 2));
    lo[d] = parse_number(w[0], in.where(), "box bound");
    hi[d] = parse_number(w[1], in.where(), "box bound");
    if (triclinic) tilt[d] = parse_number(w[2], in.where(), "tilt factor");
  }
  const double xy = tilt[0], xz = tilt[1], yz = tilt[2];
  // The dump gives the bounding box of the tilted cell: xlo_bound = xlo + min(0, xy, xz, xy + xz),
  // xhi_bound = xhi + max(0, xy, xz, xy + xz), ylo_bound = ylo + min(0, yz), yhi_bound = yhi + max(0, yz).
  const double xlo = lo[0] - std::min({0.0, xy, xz, xy + xz});
  const double xhi = hi[0] - std::max({0.0, xy, xz, xy + xz});
  const double ylo = lo[1] - std::min(0.0, yz);
  const double yhi = hi[1] - std::max(0.0, yz);
  Box box;
  // a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz)
  box.h = {xhi - xlo, 0.0, 0.0, xy, yhi - ylo, 0.0, xz, yz, hi[2] - lo[2]};
  box.origin = {xlo, ylo, lo[2]};
  box.periodic = periodic == 3;
  Cell::validate(box.h.data(), fmt::format("the cell of the snapshot before {}", in.where()));
  return box;
}

// Where the columns of "ITEM: ATOMS ..." are.
struct Columns {
  int count = 0;
  int id = -1, type = -1, element = -1;
  std::array<int, 3> position{-1, -1, -1};
  bool scaled = false;
};

Columns read_columns(const std::vector<std::string>& names, const std::string& where) {
  Columns c;
  c.count = static_cast<int>(names.size());
  std::map<std::string, int> at;
  for (int k = 0; k < c.count; ++k) at.emplace(names[static_cast<std::size_t>(k)], k);
  const auto find = [&](const std::string& name) { return at.count(name) ? at[name] : -1; };
  c.id = find("id");
  c.type = find("type");
  c.element = find("element");
  if (c.id < 0)
    throw DataError(
        fmt::format("{}: the ATOMS columns ({}) have no 'id'; add id to the dump command, so that "
                    "atoms can be put in the same order in every snapshot",
                    where, fmt::join(names, " ")));
  if (c.type < 0 && c.element < 0)
    throw DataError(fmt::format("{}: the ATOMS columns ({}) have neither 'type' nor 'element'", where,
                                fmt::join(names, " ")));
  // Unscaled wrapped, unscaled unwrapped, scaled wrapped, scaled unwrapped: the first the dump has.
  const std::array<std::array<const char*, 3>, 4> triples = {
      {{"x", "y", "z"}, {"xu", "yu", "zu"}, {"xs", "ys", "zs"}, {"xsu", "ysu", "zsu"}}};
  for (std::size_t t = 0; t < triples.size(); ++t) {
    const std::array<int, 3> p = {find(triples[t][0]), find(triples[t][1]), find(triples[t][2])};
    if (p[0] >= 0 && p[1] >= 0 && p[2] >= 0) {
      c.position = p;
      c.scaled = t >= 2;
      return c;
    }
  }
  throw DataError(
      fmt::format("{}: the ATOMS columns ({}) have no coordinates (x y z, xu yu zu, xs ys zs or "
                  "xsu ysu zsu)",
                  where, fmt::join(names, " ")));
}

struct Snapshot {
  std::int64_t timestep = 0;
  std::vector<std::string> elements;  // in id order
  std::vector<double> coord;          // natoms x 3 (A), in id order
  Box box;
};

// The atoms of one snapshot: `natoms` lines after "ITEM: ATOMS" (`names`: its column names).
void read_atoms(const std::vector<std::string>& names, std::int64_t natoms,
                const std::vector<std::string>& type_elements, LineReader& in, Snapshot& s) {
  const Columns c = read_columns(names, in.where());
  struct Atom {
    std::int64_t id;
    std::string element;
    std::array<double, 3> x;
    std::string where;
  };
  std::vector<Atom> atoms(static_cast<std::size_t>(natoms));
  for (auto& a : atoms) {
    const std::string line = in.need(fmt::format("the {} atoms of timestep {}", natoms, s.timestep));
    a.where = in.where();
    const auto w = split_words(line);
    if (static_cast<int>(w.size()) != c.count)
      throw DataError(
          fmt::format("{}: atom line has {} columns, the ATOMS header names {}", a.where, w.size(), c.count));
    a.id = integer(w[static_cast<std::size_t>(c.id)], a.where, "atom id");
    if (c.element >= 0) {
      a.element = w[static_cast<std::size_t>(c.element)];
    } else {
      const auto type = integer(w[static_cast<std::size_t>(c.type)], a.where, "atom type");
      if (type_elements.empty())
        throw DataError(
            fmt::format("{}: the dump has LAMMPS types but no 'element' column; give the element "
                        "of each type in type order (deepkf uncertainty --type-map O H)",
                        a.where));
      if (type < 1 || type > static_cast<std::int64_t>(type_elements.size()))
        throw DataError(
            fmt::format("{}: atom {} has type {}, but the type map gives elements for types 1 to "
                        "{} ({}); give one element per LAMMPS type, in type order",
                        a.where, a.id, type, type_elements.size(), fmt::join(type_elements, " ")));
      a.element = type_elements[static_cast<std::size_t>(type - 1)];
    }
    for (int d = 0; d < 3; ++d)
      a.x[static_cast<std::size_t>(d)] = parse_number(
          w[static_cast<std::size_t>(c.position[static_cast<std::size_t>(d)])], a.where, "coordinate");
  }
  std::sort(atoms.begin(), atoms.end(), [](const Atom& p, const Atom& q) { return p.id < q.id; });
  for (std::size_t i = 1; i < atoms.size(); ++i)
    if (atoms[i].id == atoms[i - 1].id)
      throw DataError(fmt::format("{}: atom id {} appears twice in timestep {} (also at {})", atoms[i].where,
                                  atoms[i].id, s.timestep, atoms[i - 1].where));
  for (const auto& a : atoms) {
    s.elements.push_back(a.element);
    std::array<double, 3> x = a.x;
    if (c.scaled) {
      // x = origin + s_a a + s_b b + s_c c
      for (int d = 0; d < 3; ++d)
        x[static_cast<std::size_t>(d)] = s.box.origin[static_cast<std::size_t>(d)] + a.x[0] * s.box.h[d] +
                                         a.x[1] * s.box.h[3 + d] + a.x[2] * s.box.h[6 + d];
    }
    s.coord.insert(s.coord.end(), x.begin(), x.end());
  }
}

// The next snapshot, from its "ITEM: TIMESTEP" line (already read); false at the end of the file.
bool read_snapshot(LineReader& in, const std::vector<std::string>& type_elements, Snapshot& s) {
  std::string line;
  do {
    if (!in.next(line)) return false;
  } while (split_words(line).empty());
  if (split_words(line) != std::vector<std::string>{"ITEM:", "TIMESTEP"})
    throw DataError(fmt::format("{}: expected 'ITEM: TIMESTEP', found '{}'", in.where(), line));
  s = Snapshot{};
  const std::string where = in.where();
  const auto step = split_words(in.need("the timestep"));
  if (step.size() != 1)
    throw DataError(fmt::format("{}: timestep line has {} values", in.where(), step.size()));
  s.timestep = integer(step[0], in.where(), "timestep");
  std::int64_t natoms = -1;
  bool have_box = false;
  while (true) {
    const std::string item = in.need(fmt::format("the atoms of timestep {} (from {})", s.timestep, where));
    const auto w = split_words(item);
    if (w.size() < 2 || w[0] != "ITEM:")
      throw DataError(
          fmt::format("{}: expected an ITEM line of timestep {}, found '{}'", in.where(), s.timestep, item));
    if (w[1] == "NUMBER" && w.size() == 4 && w[2] == "OF" && w[3] == "ATOMS") {
      natoms = integer(in.need("the atom count"), in.where(), "number of atoms");
      if (natoms < 1) throw DataError(fmt::format("{}: number of atoms is {}", in.where(), natoms));
    } else if (w[1] == "BOX" && w.size() >= 3 && w[2] == "BOUNDS") {
      s.box = read_box(std::vector<std::string>(w.begin() + 3, w.end()), in);
      have_box = true;
    } else if (w[1] == "UNITS") {
      const std::string units = in.need("the units");
      if (units != "metal" && units != "real")
        throw DataError(fmt::format("{}: units '{}'; deepkf reads coordinates in A (units metal or real)",
                                    in.where(), units));
    } else if (w[1] == "TIME") {
      in.need("the time");
    } else if (w[1] == "ATOMS") {
      if (natoms < 0 || !have_box)
        throw DataError(fmt::format("{}: ITEM: ATOMS of timestep {} before its {}", in.where(), s.timestep,
                                    natoms < 0 ? "NUMBER OF ATOMS" : "BOX BOUNDS"));
      read_atoms(std::vector<std::string>(w.begin() + 2, w.end()), natoms, type_elements, in, s);
      return true;
    } else {
      throw DataError(fmt::format("{}: unknown item '{}' in timestep {}", in.where(), item, s.timestep));
    }
  }
}

}  // namespace

bool is_lammps_dump(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path);
  std::string line;
  for (int k = 0; k < 100 && std::getline(in, line); ++k) {
    const auto w = split_words(line);
    if (!w.empty()) return w == std::vector<std::string>{"ITEM:", "TIMESTEP"};
  }
  return false;
}

LammpsDump read_lammps_dump(const std::string& path, const std::vector<std::string>& type_elements,
                            DumpEnd end) {
  LineReader in(path);
  LammpsDump out;
  Snapshot s;
  while (true) {
    try {
      if (!read_snapshot(in, type_elements, s)) break;
      if (end == DumpEnd::kMayBeCut && in.torn()) {
        out.cut_short = true;
        break;
      }
    } catch (const DataError&) {
      // A run still writing (or killed while writing) leaves a last snapshot cut short.
      if (end != DumpEnd::kMayBeCut || !in.at_end()) throw;
      out.cut_short = true;
      break;
    }
    // The system with the same elements in id order and the same periodicity, or a new one.
    std::size_t k = 0;
    for (; k < out.systems.size(); ++k) {
      const System& sys = out.systems[k];
      if (sys.periodic != s.box.periodic || sys.natoms != static_cast<std::int64_t>(s.elements.size()))
        continue;
      bool same = true;
      for (std::size_t i = 0; same && i < s.elements.size(); ++i)
        same = sys.type_map[static_cast<std::size_t>(sys.atom_types[i])] == s.elements[i];
      if (same) break;
    }
    if (k == out.systems.size()) {
      System sys;
      sys.periodic = s.box.periodic;
      sys.natoms = static_cast<std::int64_t>(s.elements.size());
      for (const auto& e : s.elements) {
        auto it = std::find(sys.type_map.begin(), sys.type_map.end(), e);
        if (it == sys.type_map.end()) it = sys.type_map.insert(sys.type_map.end(), e);
        sys.atom_types.push_back(static_cast<int>(it - sys.type_map.begin()));
      }
      out.systems.push_back(std::move(sys));
      out.timesteps.emplace_back();
    }
    System& sys = out.systems[k];
    sys.coord.insert(sys.coord.end(), s.coord.begin(), s.coord.end());
    if (sys.periodic) sys.box.insert(sys.box.end(), s.box.h.begin(), s.box.h.end());
    ++sys.nframes;
    out.timesteps[k].push_back(s.timestep);
  }
  if (out.systems.empty() && end == DumpEnd::kComplete)
    throw DataError(fmt::format("LAMMPS dump {} has no snapshot", path));
  for (std::size_t k = 0; k < out.systems.size(); ++k)
    out.systems[k].source = k == 0 ? path : fmt::format("{}:{}", path, k);
  return out;
}

}  // namespace deepkf
