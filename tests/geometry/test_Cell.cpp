#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"
#include "tests/support/Catch.hpp"

using deepkf::Cell;
using deepkf::DataError;

namespace {

// A random right-handed triclinic cell: a diagonal of lengths in [lo, hi] plus off-diagonal tilts.
std::array<double, 9> random_cell(std::mt19937_64& rng, double lo, double hi, double tilt) {
  std::uniform_real_distribution<double> len(lo, hi), off(-tilt, tilt);
  std::array<double, 9> h{};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) h[3 * r + c] = (r == c) ? len(rng) : off(rng);
  return h;
}

}  // namespace

TEST_CASE("cell volume, inverse and widths of a known triclinic cell", "[geometry][cell]") {
  // a = (4, 0, 0), b = (1, 5, 0), c = (0.5, 0.25, 6): det = 4 * 5 * 6 = 120 (upper triangle is zero).
  const double box[9] = {4, 0, 0, 1, 5, 0, 0.5, 0.25, 6};
  const Cell cell(box);
  CHECK(cell.volume() == Approx(120.0).epsilon(1e-14));

  // H H^{-1} = I
  const auto& inv = cell.inverse();
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      double s = 0.0;
      for (int k = 0; k < 3; ++k) s += box[3 * r + k] * inv[3 * k + c];
      INFO("(H H^-1)[" << r << "][" << c << "] = " << s);
      CHECK(s == Approx(r == c ? 1.0 : 0.0).margin(1e-14));
    }
  }

  // Face distances: c is the only vector with a z component, so w_c = 6; a x b ... by hand:
  // |b x c| = |(30, -6, -2.25)| , w_a = 120 / that; |c x a| = |(0, 24, -1)|, w_b = 120 / that.
  const auto w = cell.perpendicular_widths();
  CHECK(w[0] == Approx(120.0 / std::sqrt(900.0 + 36.0 + 2.25 * 2.25)));
  CHECK(w[1] == Approx(120.0 / std::sqrt(576.0 + 1.0)));
  CHECK(w[2] == Approx(6.0));
}

TEST_CASE("cell fractional round trip and wrap on random triclinic cells", "[geometry][cell]") {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-30.0, 30.0);
  for (int trial = 0; trial < 50; ++trial) {
    const auto h = random_cell(rng, 2.0, 15.0, 4.0);
    const Cell cell(h.data());
    // volume is the triple product a . (b x c), computed here from the permutation expansion
    const double det = h[0] * (h[4] * h[8] - h[5] * h[7]) - h[1] * (h[3] * h[8] - h[5] * h[6]) +
                       h[2] * (h[3] * h[7] - h[4] * h[6]);
    CHECK(cell.volume() == Approx(det).epsilon(1e-12));
    // Widths: projection of each vector onto the unit normal of the other two; equals 1 / |column k of H^-1|.
    const auto w = cell.perpendicular_widths();
    for (int k = 0; k < 3; ++k) {
      const auto& inv = cell.inverse();
      const double ncol = std::sqrt(inv[k] * inv[k] + inv[3 + k] * inv[3 + k] + inv[6 + k] * inv[6 + k]);
      CHECK(w[k] == Approx(1.0 / ncol).epsilon(1e-12));
    }
    for (int p = 0; p < 20; ++p) {
      const double x[3] = {u(rng), u(rng), u(rng)};
      double f[3], y[3];
      cell.to_fractional(x, f);
      cell.to_cartesian(f, y);
      for (int k = 0; k < 3; ++k) CHECK(y[k] == Approx(x[k]).margin(1e-12));

      double xw[3] = {x[0], x[1], x[2]};
      cell.wrap(xw);
      double fw[3];
      cell.to_fractional(xw, fw);
      for (int k = 0; k < 3; ++k) {
        INFO("trial " << trial << " point " << p << " wrapped fractional " << fw[k]);
        CHECK(fw[k] >= -1e-12);
        CHECK(fw[k] < 1.0 + 1e-12);
        // x - wrap(x) is a whole lattice translation
        const double n = f[k] - fw[k];
        CHECK(std::abs(n - std::round(n)) < 1e-9);
      }
    }
  }
}

TEST_CASE("cell validate rejects non-finite, singular and left-handed boxes", "[geometry][cell]") {
  using Catch::Matchers::Contains;
  const double good[9] = {12.445, 0, 0, 0, 12.445, 0, 0, 0, 12.445};
  CHECK_NOTHROW(Cell::validate(good, "box in water/data_0/set.000 frame 0"));

  double nan_box[9] = {12.445, 0, 0, 0, 12.445, 0, 0, 0, 12.445};
  nan_box[4] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(Cell::validate(nan_box, "box in s frame 2"), DataError);
  CHECK_THROWS_WITH(Cell::validate(nan_box, "box in s frame 2"),
                    Contains("box in s frame 2") && Contains("non-finite") && Contains("box[4] = nan"));
  CHECK_THROWS_AS(Cell(nan_box), DataError);

  // c = a + b: coplanar vectors, det = 0
  const double flat[9] = {3, 0, 0, 0, 4, 0, 3, 4, 0};
  CHECK_THROWS_WITH(Cell::validate(flat, "box in s frame 5"),
                    Contains("box in s frame 5") && Contains("singular"));
  CHECK_THROWS_AS(Cell(flat), DataError);
  // nearly coplanar: det / (|a||b||c|) ~ 1e-13
  const double almost_flat[9] = {3, 0, 0, 0, 4, 0, 3, 4, 1e-12};
  CHECK_THROWS_WITH(Cell::validate(almost_flat, "here"), Contains("singular"));

  // Finite entries whose volume overflows (the fuzz driver's box that crashed the neighbour list): refused.
  const double huge[9] = {1e-222, 7.6e29, 3.2e97, 7.6e29, -2.9e199, 2.7e159, 3.2e97, 2.7e159, 4.5e36};
  CHECK_THROWS_WITH(Cell::validate(huge, "box in s frame 2"),
                    Contains("box in s frame 2") && Contains("too large to compute with"));
  CHECK_THROWS_AS(Cell(huge), DataError);

  // swapping a and b makes the cell left-handed: det = -12.445^3 = -1927.4
  const double left[9] = {0, 12.445, 0, 12.445, 0, 0, 0, 0, 12.445};
  CHECK_THROWS_WITH(Cell::validate(left, "box in water/data_0/set.000 frame 3"),
                    Contains("box in water/data_0/set.000 frame 3 is left-handed") &&
                        Contains("det = -1927") && Contains("right-handed"));
  // The constructor accepts it (geometry is still well defined) and reports the negative volume.
  const Cell lcell(left);
  CHECK(lcell.volume() == Approx(-12.445 * 12.445 * 12.445));
  CHECK(lcell.perpendicular_widths()[2] == Approx(12.445));
}
