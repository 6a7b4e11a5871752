#pragma once
// CP2K inputs from a user's template. The template is a complete CP2K input (RUN_TYPE ENERGY_FORCE, the
// DFT settings, &PRINT &FORCES and &STRESS_TENSOR) with placeholders that each frame fills:
//   {{cell}}     the &CELL vectors: lines "A ax ay az", "B ...", "C ..." (A)
//   {{coord}}    the &COORD lines "Element x y z" (A), in the frame's atom order
//   {{kinds}}    a &KIND section per element of the frame, from label.kinds (basis set, potential)
//   {{kpoints}}  "n1 n2 n3" for SCHEME MONKHORST-PACK, from label.kpoint_spacing
// A placeholder alone on its line (after blanks) gives every line it expands to the same indentation.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

// The Monkhorst-Pack mesh with at most `spacing` (1/A, 2 pi included, as VASP's KSPACING) between k-points:
// n_i = max(1, ceil(|b_i| / spacing)) with |b_i| = 2 pi / w_i, w_i the distance between the cell's faces
// across direction i. box9: rows a, b, c (A).
std::array<int, 3> kpoint_mesh(const double* box9, double spacing);

class Cp2kTemplate {
 public:
  // Reads the template `path`; kinds and kpoint_spacing (0: none) come from the loop input, named in errors
  // as `origin` ("label in loop.json"). Throws ConfigError naming the file for an unknown placeholder (with
  // the nearest known one), a missing {{cell}} or {{coord}}, {{kinds}} without kinds, {{kpoints}} without a
  // spacing, or a template that does not print forces and the stress tensor.
  Cp2kTemplate(const std::string& path, std::map<std::string, std::array<std::string, 2>> kinds,
               double kpoint_spacing, std::string origin);

  // The input for frame `frame` of `system` (periodic). Throws ConfigError when label.kinds lacks an element
  // of the frame and {{kinds}} is used.
  std::string render(const System& system, std::int64_t frame) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string text_;
  std::map<std::string, std::array<std::string, 2>> kinds_;
  double kpoint_spacing_;
  std::string origin_;
};

}  // namespace deepkf
