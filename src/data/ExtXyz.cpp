#include "src/data/ExtXyz.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "src/core/Error.hpp"
#include "src/data/FrameSource.hpp"
#include "src/data/TextFields.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {

namespace {

// The shortest atom line: a one-letter species, three one-digit coordinates, blanks and a newline.
constexpr std::int64_t kMinAtomLineBytes = 8;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// key=value pairs of a comment line; keys lower-cased, quotes removed.
std::map<std::string, std::string> parse_comment(const std::string& line, const std::string& where) {
  std::map<std::string, std::string> kv;
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (i < n) {
    while (i < n && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= n) break;
    const std::size_t k0 = i;
    while (i < n && line[i] != '=' && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::string key = lower(line.substr(k0, i - k0));
    while (i < n && line[i] == ' ') ++i;
    if (i >= n || line[i] != '=') {
      kv[key] = "T";  // a bare flag
      continue;
    }
    ++i;
    while (i < n && line[i] == ' ') ++i;
    std::string value;
    if (i < n && (line[i] == '"' || line[i] == '\'' || line[i] == '{')) {
      const char close = line[i] == '{' ? '}' : line[i];
      const std::size_t end = line.find(close, i + 1);
      if (end == std::string::npos)
        throw DataError(fmt::format("{}: unterminated quoted value for key '{}'", where, key));
      value = line.substr(i + 1, end - i - 1);
      i = end + 1;
    } else {
      const std::size_t v0 = i;
      while (i < n && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      value = line.substr(v0, i - v0);
    }
    kv[key] = value;
  }
  return kv;
}

std::vector<double> numbers(const std::string& s, const std::string& where, const std::string& what) {
  std::vector<double> out;
  for (const auto& w : split_words(s)) out.push_back(parse_number(w, where, what));
  return out;
}

bool truth(const std::string& s, const std::string& where) {
  const std::string l = lower(s);
  if (l == "t" || l == "true" || l == "1") return true;
  if (l == "f" || l == "false" || l == "0") return false;
  throw DataError(fmt::format("{}: pbc entry '{}' is not T or F", where, s));
}

// The labels under the names programs give them (lower case, as keys are compared): ASE writes energy,
// forces and stress; MACE's data sets use REF_energy, REF_forces, REF_stress; the libAtoms GAP data sets
// dft_energy, dft_force, dft_virial. Where a frame has several, the first of each list is taken.
constexpr const char* kEnergyKeys[] = {"energy", "ref_energy", "dft_energy"};
constexpr const char* kVirialKeys[] = {"virial", "ref_virial", "dft_virial"};
constexpr const char* kStressKeys[] = {"stress", "ref_stress", "dft_stress"};
const std::string kForceColumns[] = {"forces", "force", "ref_forces", "ref_force", "dft_forces", "dft_force"};

// The first of `keys` present in kv, or "".
template <std::size_t N>
std::string first_key(const std::map<std::string, std::string>& kv, const char* const (&keys)[N]) {
  for (const char* k : keys)
    if (kv.count(k)) return k;
  return {};
}

struct Frame {
  std::vector<std::string> species;
  bool periodic = false;
  std::vector<double> coord, box, force, virial;
  double energy = 0.0;
  std::int64_t line = 0;  // 1-based line of the atom count
};

struct Group {
  std::vector<std::string> species;
  bool periodic = false;
  std::vector<Frame> frames;
};

// Where the columns of an atom line are, from the comment's Properties (name:type:ncols triples).
struct Columns {
  int count = 0, species = -1, pos = -1, force = -1;  // -1: absent
};

Columns parse_properties(const std::string& props, const std::string& cwhere) {
  std::vector<std::string> parts;
  {
    std::string part;
    std::istringstream ps(props);
    while (std::getline(ps, part, ':')) parts.push_back(part);
  }
  if (parts.size() % 3 != 0)
    throw DataError(fmt::format("{}: Properties '{}' is not a list of name:type:ncols", cwhere, props));
  Columns c;
  std::size_t force_rank = std::size(kForceColumns);  // priority of the force column taken so far
  for (std::size_t p = 0; p < parts.size(); p += 3) {
    const std::string name = lower(parts[p]);
    const int width = std::atoi(parts[p + 2].c_str());
    if (width <= 0)
      throw DataError(
          fmt::format("{}: Properties entry '{}' has bad width '{}'", cwhere, parts[p], parts[p + 2]));
    if (name == "species") c.species = c.count;
    if (name == "pos" && width == 3) c.pos = c.count;
    const std::size_t rank = static_cast<std::size_t>(
        std::find(std::begin(kForceColumns), std::end(kForceColumns), name) - std::begin(kForceColumns));
    if (width == 3 && rank < force_rank) {
      c.force = c.count;
      force_rank = rank;
    }
    c.count += width;
  }
  if (c.species < 0 || c.pos < 0)
    throw DataError(fmt::format("{}: Properties '{}' lacks species:S:1 or pos:R:3", cwhere, props));
  return c;
}

// The frame's periodicity and Lattice, and its virial (given, or from a stress times the volume).
void read_cell_and_virial(std::map<std::string, std::string>& kv, const std::string& cwhere, Frame& fr) {
  const bool has_lattice = kv.count("lattice") > 0;
  std::vector<bool> pbc(3, has_lattice);
  if (kv.count("pbc")) {
    const auto w = split_words(kv["pbc"]);
    if (w.size() != 3) throw DataError(fmt::format("{}: pbc='{}' needs 3 values", cwhere, kv["pbc"]));
    for (int k = 0; k < 3; ++k) pbc[k] = truth(w[k], cwhere);
  }
  if (!(pbc[0] == pbc[1] && pbc[1] == pbc[2]))
    throw DataError(fmt::format("{}: partial periodicity pbc='{}' is not supported (use T T T or F F F)",
                                cwhere, kv["pbc"]));
  fr.periodic = pbc[0];
  if (fr.periodic) {
    if (!has_lattice) throw DataError(fmt::format("{}: periodic frame has no Lattice", cwhere));
    fr.box = numbers(kv["lattice"], cwhere, "Lattice");
    if (fr.box.size() != 9)
      throw DataError(fmt::format("{}: Lattice has {} numbers, expected 9", cwhere, fr.box.size()));
    Cell::validate(fr.box.data(), fmt::format("Lattice in {}", cwhere));
  }
  const std::string virial_key = first_key(kv, kVirialKeys), stress_key = first_key(kv, kStressKeys);
  if (!virial_key.empty()) {
    fr.virial = numbers(kv[virial_key], cwhere, virial_key);
    if (fr.virial.size() != 9)
      throw DataError(fmt::format("{}: {} has {} numbers, expected 9", cwhere, virial_key, fr.virial.size()));
  } else if (!stress_key.empty()) {
    auto s = numbers(kv[stress_key], cwhere, stress_key);
    if (s.size() == 6) s = {s[0], s[5], s[4], s[5], s[1], s[3], s[4], s[3], s[2]};  // Voigt xx yy zz yz xz xy
    if (s.size() != 9)
      throw DataError(fmt::format("{}: {} has {} numbers, expected 9 or 6", cwhere, stress_key, s.size()));
    if (!fr.periodic)
      throw DataError(fmt::format("{}: {} given for a non-periodic frame", cwhere, stress_key));
    // virial = -stress * V
    const double volume = Cell(fr.box.data()).volume();
    fr.virial.resize(9);
    for (int k = 0; k < 9; ++k) fr.virial[k] = -s[k] * volume;
  }
}

Frame parse_frame(std::ifstream& in, const std::string& path, std::int64_t& lineno, std::int64_t natoms) {
  Frame fr;
  fr.line = lineno;
  std::string comment;
  if (!std::getline(in, comment))
    throw DataError(fmt::format("{} line {}: file ends before the comment line of a {}-atom frame", path,
                                lineno + 1, natoms));
  ++lineno;
  const std::string cwhere = fmt::format("{} line {}", path, lineno);
  auto kv = parse_comment(comment, cwhere);
  const std::string props = kv.count("properties") ? kv["properties"] : "species:S:1:pos:R:3";
  const Columns col = parse_properties(props, cwhere);

  const std::string energy_key = first_key(kv, kEnergyKeys);
  if (energy_key.empty())
    throw DataError(fmt::format("{}: frame has no energy= key (nor REF_energy= or DFT_energy=)", cwhere));
  fr.energy = parse_number(kv[energy_key], cwhere, energy_key);
  read_cell_and_virial(kv, cwhere, fr);

  fr.species.reserve(static_cast<std::size_t>(natoms));
  fr.coord.reserve(static_cast<std::size_t>(3 * natoms));
  if (col.force >= 0) fr.force.reserve(static_cast<std::size_t>(3 * natoms));
  std::string line;
  for (std::int64_t a = 0; a < natoms; ++a) {
    if (!std::getline(in, line))
      throw DataError(fmt::format("{} line {}: file ends after {} of {} atom lines of the frame at line {}",
                                  path, lineno + 1, a, natoms, fr.line));
    ++lineno;
    const std::string where = fmt::format("{} line {}", path, lineno);
    const auto cols = split_words(line);
    if (static_cast<int>(cols.size()) < col.count)
      throw DataError(fmt::format("{}: atom line has {} columns, Properties '{}' needs {}", where,
                                  cols.size(), props, col.count));
    fr.species.push_back(cols[static_cast<std::size_t>(col.species)]);
    for (int k = 0; k < 3; ++k)
      fr.coord.push_back(parse_number(cols[static_cast<std::size_t>(col.pos + k)], where, "pos"));
    if (col.force >= 0)
      for (int k = 0; k < 3; ++k)
        fr.force.push_back(parse_number(cols[static_cast<std::size_t>(col.force + k)], where, "force"));
  }
  return fr;
}

System to_system(Group& g, const std::string& source) {
  System s;
  s.source = source;
  s.periodic = g.periodic;
  s.natoms = static_cast<std::int64_t>(g.species.size());
  s.nframes = static_cast<std::int64_t>(g.frames.size());
  for (const auto& name : g.species) {
    auto it = std::find(s.type_map.begin(), s.type_map.end(), name);
    if (it == s.type_map.end()) {
      s.type_map.push_back(name);
      it = s.type_map.end() - 1;
    }
    s.atom_types.push_back(static_cast<int>(it - s.type_map.begin()));
  }
  const Frame& first = g.frames.front();
  for (const Frame& fr : g.frames) {
    const auto mismatch = [&](const char* what, bool has) {
      return DataError(
          fmt::format("{}: the frame at line {} {} {} but the frame at line {} (same species) {}",
                      source.substr(0, source.rfind(':')), fr.line, has ? "has" : "lacks", what, first.line,
                      has ? "does not" : "does"));
    };
    if (fr.force.empty() != first.force.empty()) throw mismatch("forces", !fr.force.empty());
    if (fr.virial.empty() != first.virial.empty()) throw mismatch("a virial/stress", !fr.virial.empty());
    s.coord.insert(s.coord.end(), fr.coord.begin(), fr.coord.end());
    s.box.insert(s.box.end(), fr.box.begin(), fr.box.end());
    s.force.insert(s.force.end(), fr.force.begin(), fr.force.end());
    s.virial.insert(s.virial.end(), fr.virial.begin(), fr.virial.end());
    s.energy.push_back(fr.energy);
  }
  return s;
}

}  // namespace

std::vector<System> read_extxyz(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError(fmt::format("cannot open {}", path));
  in.seekg(0, std::ios::end);
  const std::int64_t file_size = static_cast<std::int64_t>(in.tellg());
  in.seekg(0, std::ios::beg);
  std::vector<Group> groups;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto words = split_words(line);
    if (words.empty()) continue;  // blank lines between or after frames
    char* end = nullptr;
    const long long natoms = std::strtoll(words[0].c_str(), &end, 10);
    if (words.size() != 1 || *end != '\0' || natoms <= 0)
      throw DataError(
          fmt::format("{} line {}: expected the atom count of a frame, found '{}'", path, lineno, line));
    // An atom line is at least "X 0 0 0" and a newline: a count the rest of the file cannot hold is a
    // corrupt count line, found before anything is allocated for it.
    const std::int64_t left = file_size - static_cast<std::int64_t>(in.tellg());
    if (natoms > (left + 1) / kMinAtomLineBytes)
      throw DataError(
          fmt::format("{} line {}: atom count {} is impossible: an atom line takes at least {} "
                      "bytes, and only {} bytes follow in the file",
                      path, lineno, words[0], kMinAtomLineBytes, left));
    Frame fr = parse_frame(in, path, lineno, natoms);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.periodic == fr.periodic && g.species == fr.species;
    });
    if (it == groups.end()) {
      groups.push_back(Group{fr.species, fr.periodic, {}});
      it = groups.end() - 1;
    }
    it->frames.push_back(std::move(fr));
  }
  if (groups.empty()) throw DataError(fmt::format("{} holds no frames", path));

  std::vector<std::vector<std::string>> species;
  std::vector<bool> periodic;
  for (const Group& g : groups) {
    species.push_back(g.species);
    periodic.push_back(g.periodic);
  }
  const std::vector<std::string> names = system_names(path, species, periodic);
  std::vector<System> out;
  for (std::size_t k = 0; k < groups.size(); ++k) out.push_back(to_system(groups[k], names[k]));
  return out;
}

}  // namespace deepkf
