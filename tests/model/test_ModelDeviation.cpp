// Model deviation formulas against hand-computed values.
#include <cmath>

#include "src/model/ModelDeviation.hpp"
#include "tests/support/Catch.hpp"

using Approx = Catch::Detail::Approx;

TEST_CASE("force deviation is the rms distance to the ensemble mean", "[deviation]") {
  // atom 0: models (1,0,0) and (3,0,0): mean (2,0,0), each 1 away -> 1
  // atom 1: identical models -> 0
  const double forces[] = {1, 0, 0, 3, 0, 0, /**/ 0.5, -2, 4, 0.5, -2, 4};
  const auto devi = deepkf::force_deviation(forces, 2, 2);
  REQUIRE(devi.size() == 2);
  CHECK(devi[0] == Approx(1.0));
  CHECK(devi[1] == 0.0);
  // relative: 1 / (|(2,0,0)| + 0.5)
  const auto rel = deepkf::force_deviation(forces, 2, 2, 0.5);
  CHECK(rel[0] == Approx(1.0 / 2.5));
  // three models in 3d: F = (0,0,0), (0,3,0), (0,0,3): mean (0,1,1); squared distances 2, 5, 5 -> sqrt(4)
  const double three[] = {0, 0, 0, 0, 3, 0, 0, 0, 3};
  CHECK(deepkf::force_deviation(three, 1, 3)[0] == Approx(2.0));
}

TEST_CASE("virial deviation is the per-component std divided by the atom count", "[deviation]") {
  double virials[18] = {};
  virials[4] = 2.0;      // model 0, yy
  virials[9 + 4] = 6.0;  // model 1, yy: std 2
  const auto s = deepkf::virial_deviation(virials, 2, 4.0);
  CHECK(s[4] == Approx(0.5));
  CHECK(s[0] == 0.0);
  // relative_v 0.25: the mean virial is 4 in yy, |<W>| / natoms = 1, so 0.5 / (1 + 0.25).
  const auto r = deepkf::virial_deviation(virials, 2, 4.0, 0.25);
  CHECK(r[4] == Approx(0.4));
  CHECK(r[0] == 0.0);
}

TEST_CASE("a model_devi.out row: extremes over atoms and virial components", "[deviation]") {
  // Two atoms, two models: atom 0 deviates by 1 (as above), atom 1 by sqrt(3) ((1,1,1) against (-1,-1,-1)).
  const double forces[] = {1, 0, 0, 3, 0, 0, /**/ 1, 1, 1, -1, -1, -1};
  double virials[18] = {};
  virials[0] = 4.0;      // model 0, xx; model 1 xx = 0: std 2, per atom 1
  virials[9 + 8] = 2.0;  // model 1, zz: std 1, per atom 0.5
  deepkf::DeviationExtremes atoms;
  atoms.add(deepkf::force_deviation(forces, 2, 2));
  const auto row = deepkf::deviation_row(atoms, deepkf::virial_deviation(virials, 2, 2.0));
  CHECK(row.max_devi_f == Approx(std::sqrt(3.0)));
  CHECK(row.min_devi_f == Approx(1.0));
  CHECK(row.avg_devi_f == Approx((1.0 + std::sqrt(3.0)) / 2));
  CHECK(row.max_devi_v == Approx(1.0));
  CHECK(row.min_devi_v == 0.0);
  // DeePMD-kit's avg_devi_v: the root mean square of the 9 components, sqrt((1 + 0.25) / 9).
  CHECK(row.avg_devi_v == Approx(std::sqrt(1.25 / 9)));

  // No atoms: model_devi.out prints zeros, not inf.
  const auto empty = deepkf::deviation_row(deepkf::DeviationExtremes{}, {});
  CHECK(empty.min_devi_f == 0.0);
  CHECK(empty.avg_devi_f == 0.0);
}
