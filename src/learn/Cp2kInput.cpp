#include "src/learn/Cp2kInput.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {
namespace {

const std::vector<std::string> kPlaceholders = {"cell", "coord", "kinds", "kpoints"};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// Whether text[pos] lies in a CP2K comment: after a '!' or '#' on its line.
bool in_comment(const std::string& text, std::size_t pos) {
  const std::size_t newline = pos == 0 ? std::string::npos : text.rfind('\n', pos - 1);
  const std::size_t from = newline == std::string::npos ? 0 : newline + 1;
  return text.find_first_of("!#", from) < pos;
}

// Calls f(name, begin, end) for every "{{ name }}" of text outside comments ([begin, end) spans the braces).
void for_each_placeholder(const std::string& text,
                          const std::function<void(const std::string&, std::size_t, std::size_t)>& f) {
  for (std::size_t at = text.find("{{"); at != std::string::npos; at = text.find("{{", at + 2)) {
    if (in_comment(text, at)) continue;
    const std::size_t close = text.find("}}", at + 2);
    if (close == std::string::npos) {
      f(text.substr(at, 20), at, std::string::npos);
      return;
    }
    std::string name = text.substr(at + 2, close - at - 2);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    f(name, at, close + 2);
  }
}

}  // namespace

std::array<int, 3> kpoint_mesh(const double* box9, double spacing) {
  const auto w = Cell(box9).perpendicular_widths();
  std::array<int, 3> n{};
  for (int i = 0; i < 3; ++i) {
    // |b_i| = 2 pi / w_i; a small tolerance keeps 4.0000000001 at 4.
    const double per = 2.0 * M_PI / w[static_cast<std::size_t>(i)] / spacing;
    n[static_cast<std::size_t>(i)] = std::max(1, static_cast<int>(std::ceil(per - 1e-9)));
  }
  return n;
}

Cp2kTemplate::Cp2kTemplate(const std::string& path, std::map<std::string, std::array<std::string, 2>> kinds,
                           double kpoint_spacing, std::string origin)
    : path_(path), kinds_(std::move(kinds)), kpoint_spacing_(kpoint_spacing), origin_(std::move(origin)) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read the CP2K template " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  text_ = buffer.str();
  std::vector<std::string> used;
  for_each_placeholder(text_, [&](const std::string& name, std::size_t, std::size_t end) {
    if (end == std::string::npos)
      throw ConfigError(
          fmt::format("CP2K template {}: '{}' opens a placeholder that is never closed", path, name));
    if (std::find(kPlaceholders.begin(), kPlaceholders.end(), name) == kPlaceholders.end()) {
      const std::string near = nearest_key(name, kPlaceholders);
      throw ConfigError(
          fmt::format("CP2K template {} has an unknown placeholder {{{{{}}}}}{} (known: {{{{cell}}}}, "
                      "{{{{coord}}}}, {{{{kinds}}}}, {{{{kpoints}}}})",
                      path, name, near.empty() ? "" : fmt::format("; did you mean {{{{{}}}}}?", near)));
    }
    used.push_back(name);
  });
  const auto uses = [&](const std::string& n) {
    return std::find(used.begin(), used.end(), n) != used.end();
  };
  for (const char* needed : {"cell", "coord"})
    if (!uses(needed))
      throw ConfigError(
          fmt::format("CP2K template {} has no {{{{{}}}}} placeholder: the frames go there", path, needed));
  if (uses("kinds") && kinds_.empty())
    throw ConfigError(
        fmt::format("CP2K template {} uses {{{{kinds}}}} but {} gives no 'kinds'", path, origin_));
  if (uses("kpoints") && !(kpoint_spacing_ > 0.0))
    throw ConfigError(
        fmt::format("CP2K template {} uses {{{{kpoints}}}} but {} gives no 'kpoint_spacing'", path, origin_));
  // Labels need forces and the stress tensor printed (&PRINT &FORCES ON, &STRESS_TENSOR ON).
  const std::string text = upper(text_);
  for (const char* needed : {"&FORCES", "&STRESS_TENSOR"}) {
    if (text.find(needed) == std::string::npos)
      throw ConfigError(
          fmt::format("CP2K template {} lacks {}: the labels need the forces and the stress tensor "
                      "printed (docs/online-learning.md)",
                      path, needed));
  }
}

std::string Cp2kTemplate::render(const System& s, std::int64_t frame) const {
  const double* box = s.box.data() + 9 * frame;
  const double* x = s.coord.data() + 3 * s.natoms * frame;
  const auto block = [&](const std::string& name) {
    std::vector<std::string> lines;
    if (name == "cell") {
      for (int k = 0; k < 3; ++k)
        lines.push_back(
            fmt::format("{} {:.10f} {:.10f} {:.10f}", "ABC"[k], box[3 * k], box[3 * k + 1], box[3 * k + 2]));
    } else if (name == "coord") {
      for (std::int64_t i = 0; i < s.natoms; ++i) {
        lines.push_back(fmt::format("{} {:.10f} {:.10f} {:.10f}",
                                    s.type_map[static_cast<std::size_t>(s.atom_types[i])], x[3 * i],
                                    x[3 * i + 1], x[3 * i + 2]));
      }
    } else if (name == "kinds") {
      for (std::size_t t = 0; t < s.type_map.size(); ++t) {
        if (std::find(s.atom_types.begin(), s.atom_types.end(), static_cast<int>(t)) == s.atom_types.end())
          continue;
        const auto it = kinds_.find(s.type_map[t]);
        if (it == kinds_.end())
          throw ConfigError(fmt::format("'kinds' of {} has no entry for element {}", origin_, s.type_map[t]));
        lines.insert(lines.end(), {"&KIND " + it->first, "  BASIS_SET " + it->second[0],
                                   "  POTENTIAL " + it->second[1], "&END KIND"});
      }
    } else {  // kpoints
      const auto n = kpoint_mesh(box, kpoint_spacing_);
      lines.push_back(fmt::format("{} {} {}", n[0], n[1], n[2]));
    }
    return lines;
  };
  std::string out;
  std::size_t copied = 0;
  for_each_placeholder(text_, [&](const std::string& name, std::size_t begin, std::size_t end) {
    // The indentation of a placeholder that starts its line repeats on every line it expands to.
    const std::size_t line_start = text_.rfind('\n', begin == 0 ? 0 : begin - 1);
    const std::size_t from = line_start == std::string::npos ? 0 : line_start + 1;
    const std::string before = text_.substr(from, begin - from);
    const bool alone = before.find_first_not_of(" \t") == std::string::npos;
    out += text_.substr(copied, begin - copied);
    const auto lines = block(name);
    for (std::size_t i = 0; i < lines.size(); ++i)
      out += (i > 0 ? "\n" + (alone ? before : "") : "") + lines[i];
    copied = end;
  });
  return out + text_.substr(copied);
}

}  // namespace deepkf
