#include "src/geometry/Cell.hpp"

#include <cmath>
#include <sstream>

#include "src/core/Error.hpp"

namespace deepkf {
namespace {

// c = a x b for 3-vectors.
void cross(const double* a, const double* b, double* c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

double norm(const double* a) { return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

// det(H) = a . (b x c) for the rows a, b, c of H.
double determinant(const double* h) {
  double bxc[3];
  cross(h + 3, h + 6, bxc);
  return h[0] * bxc[0] + h[1] * bxc[1] + h[2] * bxc[2];
}

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

// The checks shared by the constructor and validate(); handedness only when asked.
void check_box(const double* box9, const std::string& where, bool require_right_handed) {
  for (int k = 0; k < 9; ++k) {
    if (!std::isfinite(box9[k])) {
      throw DataError(where + " has a non-finite entry (box[" + std::to_string(k) +
                      "] = " + format_number(box9[k]) + ")");
    }
  }
  const double det = determinant(box9);
  const double scale = norm(box9) * norm(box9 + 3) * norm(box9 + 6);
  // Finite entries whose products overflow (1e200 A) would turn fractional coordinates into NaN.
  if (!std::isfinite(det) || !std::isfinite(scale)) {
    throw DataError(where + " is too large to compute with (|a||b||c| = " + format_number(scale) + " A^3)");
  }
  // A cell is singular when its volume is negligible next to the box spanned by its edge lengths.
  if (!(std::abs(det) >= 1e-10 * scale) || scale == 0.0) {
    throw DataError(where + " is singular (det = " + format_number(det) +
                    " A^3, |a||b||c| = " + format_number(scale) + " A^3)");
  }
  if (require_right_handed && det < 0.0) {
    throw DataError(where + " is left-handed (det = " + format_number(det) +
                    " A^3); DeePMD cells must be right-handed");
  }
}

}  // namespace

Cell::Cell(const double* box9) {
  check_box(box9, "cell", false);
  for (int k = 0; k < 9; ++k) h_[k] = box9[k];
  det_ = determinant(box9);
  // H^{-1} = adj(H) / det(H); column k of the inverse is (row i x row j) / det for cyclic (k, i, j).
  double col[3];
  for (int k = 0; k < 3; ++k) {
    cross(h_.data() + 3 * ((k + 1) % 3), h_.data() + 3 * ((k + 2) % 3), col);
    for (int r = 0; r < 3; ++r) inv_[3 * r + k] = col[r] / det_;
  }
}

void Cell::validate(const double* box9, const std::string& where) { check_box(box9, where, true); }

std::array<double, 3> Cell::perpendicular_widths() const {
  std::array<double, 3> w{};
  double c[3];
  for (int k = 0; k < 3; ++k) {
    // w_k = |V| / |row (k+1) x row (k+2)|
    cross(h_.data() + 3 * ((k + 1) % 3), h_.data() + 3 * ((k + 2) % 3), c);
    w[k] = std::abs(det_) / norm(c);
  }
  return w;
}

void Cell::to_fractional(const double* cart, double* frac) const {
  // f_k = sum_r x_r Hinv[r][k]
  const double x0 = cart[0], x1 = cart[1], x2 = cart[2];
  for (int k = 0; k < 3; ++k) frac[k] = x0 * inv_[k] + x1 * inv_[3 + k] + x2 * inv_[6 + k];
}

void Cell::to_cartesian(const double* frac, double* cart) const {
  // x_k = sum_r f_r H[r][k]
  const double f0 = frac[0], f1 = frac[1], f2 = frac[2];
  for (int k = 0; k < 3; ++k) cart[k] = f0 * h_[k] + f1 * h_[3 + k] + f2 * h_[6 + k];
}

void Cell::wrap(double* x) const {
  double f[3];
  to_fractional(x, f);
  double n[3];
  for (int k = 0; k < 3; ++k) n[k] = std::floor(f[k]);
  // x <- x - n H, the nearest lattice translate with f - n in [0, 1)
  double t[3];
  to_cartesian(n, t);
  for (int k = 0; k < 3; ++k) x[k] -= t[k];
}

}  // namespace deepkf
