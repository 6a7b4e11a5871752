#include "src/learn/Cp2kOutput.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <sstream>

#include "src/core/Error.hpp"

namespace deepkf {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::istringstream s(line);
  std::vector<std::string> out;
  for (std::string w; s >> w;) out.push_back(w);
  return out;
}

// A finite number in CP2K's notation (1.5E+00, -0.01898078; Fortran's D exponent too).
bool read_number(std::string word, double& value) {
  for (char& c : word)
    if (c == 'D' || c == 'd') c = 'E';
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  return ec == std::errc() && end == word.data() + word.size() && std::isfinite(value);
}

}  // namespace

Cp2kLabels parse_cp2k_output(const std::string& text, const std::vector<std::string>& elements, double volume,
                             const std::string& source) {
  const auto fail = [&](const std::string& what) {
    throw DataError(fmt::format("CP2K output {}: {}", source, what));
  };
  if (text.find("PROGRAM ENDED AT") == std::string::npos) fail("the run did not end (no 'PROGRAM ENDED AT')");
  if (text.find("SCF run NOT converged") != std::string::npos) fail("the SCF did not converge");
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  const auto number = [&](const std::string& word, std::size_t line) {
    double v = 0.0;
    if (!read_number(word, v)) fail(fmt::format("line {}: '{}' is not a finite number", line + 1, word));
    return v;
  };

  Cp2kLabels out;
  int energies = 0, force_blocks = 0, stress_blocks = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.find("ENERGY| Total FORCE_EVAL ( QS ) energy") != std::string::npos) {
      // ENERGY| Total FORCE_EVAL ( QS ) energy [a.u.]:   -31.474682726511197   (Hartree)
      ++energies;
      out.energy = number(split(l).back(), i) * kEvPerHartree;
    } else if (l.find("ATOMIC FORCES in") != std::string::npos) {
      // " # Atom   Kind   Element   X   Y   Z" rows until "SUM OF ATOMIC FORCES" (Hartree/Bohr)
      ++force_blocks;
      out.force.clear();
      std::size_t atom = 0;
      for (std::size_t j = i + 1;
           j < lines.size() && lines[j].find("SUM OF ATOMIC FORCES") == std::string::npos; ++j) {
        const auto w = split(lines[j]);
        if (w.size() != 6 || w[0].find_first_not_of("0123456789") != std::string::npos) continue;
        if (atom >= elements.size())
          fail(fmt::format("the force block has more rows than the {} atoms of the frame", elements.size()));
        if (w[2] != elements[atom])
          fail(fmt::format("force row {} is for element {}, the frame's atom {} is {}", atom + 1, w[2],
                           atom + 1, elements[atom]));
        for (int d = 0; d < 3; ++d)
          out.force.push_back(number(w[3 + d], j) * kEvPerAngstromPerHartreePerBohr);
        ++atom;
      }
      if (atom != elements.size())
        fail(fmt::format("the force block has {} rows for the {} atoms of the frame", atom, elements.size()));
    } else if (l.find("STRESS|") != std::string::npos && l.find("stress tensor [GPa]") != std::string::npos &&
               l.find("Eigen") == std::string::npos) {
      // STRESS| Analytical stress tensor [GPa], a header row (x y z), then rows "STRESS| x sxx sxy sxz".
      ++stress_blocks;
      for (int r = 0; r < 3; ++r) {
        const std::size_t j = i + 2 + static_cast<std::size_t>(r);
        const auto w = j < lines.size() ? split(lines[j]) : std::vector<std::string>{};
        if (w.size() != 5 || w[0] != "STRESS|" || w[1] != std::string(1, "xyz"[r]))
          fail(fmt::format("line {}: expected the {} row of the stress tensor", j + 1, "xyz"[r]));
        // W = V sigma / 160.21766 (sigma pressure-like, GPa)
        for (int c = 0; c < 3; ++c)
          out.virial[static_cast<std::size_t>(3 * r + c)] = volume * number(w[2 + c], j) / kGpaPerEvPerA3;
      }
    }
  }
  if (energies != 1) fail(fmt::format("{} total energy lines, expected 1 (RUN_TYPE ENERGY_FORCE)", energies));
  if (force_blocks != 1)
    fail(fmt::format("{} ATOMIC FORCES blocks, expected 1 (&PRINT &FORCES ON)", force_blocks));
  if (stress_blocks != 1)
    fail(fmt::format(
        "{} stress tensor blocks, expected 1 (STRESS_TENSOR ANALYTICAL, &PRINT &STRESS_TENSOR ON)",
        stress_blocks));
  return out;
}

}  // namespace deepkf
