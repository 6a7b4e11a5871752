// The training range: closest neighbours per type pair against a brute-force search over periodic images,
// merging, and its JSON form with malformed entries refused.
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "src/core/Error.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/Statistics.hpp"
#include "src/model/TrainingRange.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// min |r_j + images - r_i| over i of type c, j of type t within rcut (images n in [-2, 2]^3), by brute force.
std::vector<double> brute_force_closest(const Config& c, int ntypes, double rcut) {
  std::vector<double> d(static_cast<std::size_t>(ntypes * ntypes), kInf);
  const int m = c.box.empty() ? 0 : 2;
  for (std::int64_t i = 0; i < c.natoms(); ++i) {
    for (std::int64_t j = 0; j < c.natoms(); ++j) {
      for (int a = -m; a <= m; ++a)
        for (int b = -m; b <= m; ++b)
          for (int e = -m; e <= m; ++e) {
            if (i == j && a == 0 && b == 0 && e == 0) continue;
            double r2 = 0;
            for (int k = 0; k < 3; ++k) {
              double x = c.coord[3 * j + k] - c.coord[3 * i + k];
              if (m > 0) x += a * c.box[k] + b * c.box[3 + k] + e * c.box[6 + k];
              r2 += x * x;
            }
            const double r = std::sqrt(r2);
            auto& out = d[static_cast<std::size_t>(c.types[i] * ntypes + c.types[j])];
            if (r < rcut) out = std::min(out, r);
          }
    }
  }
  return d;
}

}  // namespace

TEST_CASE("closest neighbours per type pair equal a brute-force search over images", "[model][range]") {
  const auto mc = small_config(false, true);
  for (const auto& c : {jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11),
                        jittered_cell({3.1, 0, 0, 0.4, 2.9, 0, 0.3, -0.5, 3.2}, 2, 2, 12, 0.2)}) {
    const auto in = make_inputs(c, mc);
    REQUIRE(in.ndropped == 0);
    const auto rij = pair_vectors(in.coord, in.nlist, in.shift, mc.rcut);
    const auto got = closest_neighbours(rij, in.nlist, in.atype, mc);
    const auto want = brute_force_closest(c, 2, mc.rcut);
    REQUIRE(got.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-14));
  }
  // a type with no centres: +inf in its row
  Config two;
  two.coord = {0, 0, 0, 1.2, 0, 0};
  two.types = {0, 0};
  const auto in = make_inputs(two, mc);
  const auto got =
      closest_neighbours(pair_vectors(in.coord, in.nlist, in.shift, mc.rcut), in.nlist, in.atype, mc);
  CHECK(got[0] == Approx(1.2));
  CHECK(got[1] == kInf);
  CHECK(got[2] == kInf);
  CHECK(got[3] == kInf);
}

TEST_CASE("training ranges merge by the minimum and round-trip through JSON", "[model][range]") {
  TrainingRange a(2), b(2);
  a.add({1.0, kInf, 2.0, 3.0}, 4);
  b.add({1.5, 0.8, kInf, 2.5}, 6);
  a.merge(b);
  CHECK(a.min_distance(0, 0) == 1.0);
  CHECK(a.min_distance(0, 1) == 0.8);
  CHECK(a.min_distance(1, 0) == 2.0);
  CHECK(a.min_distance(1, 1) == 2.5);
  CHECK(a.frames() == 10);
  TrainingRange empty;
  CHECK(empty.empty());
  empty.merge(a);
  CHECK(empty.min_distance(0, 1) == 0.8);

  b = TrainingRange(2);
  b.add({1.0, kInf, 2.0, 3.0}, 4);
  const auto j = b.to_json();
  CHECK(j["min_distance"][0][1].is_null());
  const auto back = TrainingRange::from_json(j, 2, "m.pt");
  CHECK(back.to_json() == j);
  CHECK_FALSE(back.seen(0, 1));
  CHECK(TrainingRange::from_json(nullptr, 2, "m.pt").empty());
  CHECK(TrainingRange().to_json().is_null());

  auto bad = j;
  bad["min_distance"][1][0] = -1.0;
  CHECK_THROWS_WITH(TrainingRange::from_json(bad, 2, "m.pt"),
                    Catch::Contains("m.pt") && Catch::Contains("[1][0]"));
  CHECK_THROWS_AS(TrainingRange::from_json(j, 3, "m.pt"), ModelError);
  CHECK_THROWS_AS(TrainingRange::from_json({{"min_distance", "near"}}, 2, "m.pt"), ModelError);
}
