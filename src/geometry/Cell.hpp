#pragma once
// A periodic simulation cell. The 3x3 matrix H is row-major and its rows are the lattice vectors a, b, c
// (the DeePMD box.npy convention), in Angstrom. A Cartesian position is x = f H = f0 a + f1 b + f2 c for
// fractional coordinates f; the cell spans f in [0, 1)^3.
#include <array>
#include <string>

namespace deepkf {

class Cell {
 public:
  // box9: 9 values, rows a, b, c (A). Throws DataError for a non-finite entry or a singular matrix; a
  // left-handed cell is accepted here (use validate() to enforce DeePMD's right-handed convention).
  explicit Cell(const double* box9);

  // Throws DataError naming `where` (e.g. "box in water/data_0/set.000 frame 3") and the offending value
  // when box9 has a non-finite entry, is singular (|det| < 1e-10 |a||b||c|) or is left-handed (det < 0).
  static void validate(const double* box9, const std::string& where);

  // The 9 values of H, row-major (A).
  const std::array<double, 9>& matrix() const { return h_; }
  // Lattice vector k (0 = a, 1 = b, 2 = c), 3 values (A).
  const double* vector(int k) const { return h_.data() + 3 * k; }

  // Signed volume det(H) (A^3); positive for a right-handed cell.
  double volume() const { return det_; }
  // H^{-1}, row-major (1/A).
  const std::array<double, 9>& inverse() const { return inv_; }

  // Distances between opposite faces (A): w_a = V / |b x c|, w_b = V / |c x a|, w_c = V / |a x b|.
  // Images of a point closer than r exist along lattice direction k only when r > w_k.
  std::array<double, 3> perpendicular_widths() const;

  // cart: 3 values (A) -> frac: 3 values (dimensionless), f = x H^{-1}. In-place use (frac == cart) is fine.
  void to_fractional(const double* cart, double* frac) const;
  // frac: 3 values -> cart: 3 values (A), x = f H. In-place use is fine.
  void to_cartesian(const double* frac, double* cart) const;

  // Moves the point x (3 values, A) by a lattice vector so that its fractional coordinates lie in [0, 1)
  // (up to rounding: a coordinate a hair below 0 may land a hair below 1 or at 1).
  void wrap(double* x) const;

 private:
  std::array<double, 9> h_{};
  std::array<double, 9> inv_{};
  double det_ = 0.0;
};

}  // namespace deepkf
