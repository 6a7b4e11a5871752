// The data statistics against direct computations: davg and dstd of a tiny system (merged and packed
// sums), and the energy bias of an exactly solvable least-squares system.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "src/geometry/NeighborList.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/Statistics.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"

using namespace deepkf;
using namespace deepkf::test;

TEST_CASE("davg and dstd equal a direct computation on a tiny system", "[model]") {
  ModelConfig mc = small_config(true, false);
  mc.sel = {3, 4};
  const auto c = jittered_cell({4.0, 0, 0, 0.5, 4.2, 0, 0, 0.3, 3.9}, 2, 2, 5, 0.2);
  const auto nl =
      build_neighbor_list(c.coord.data(), c.natoms(), c.types.data(), c.box.data(), mc.rcut, mc.sel);
  REQUIRE(nl.ndropped > 0);  // a full sel and dropped neighbours are part of what is tested
  // direct: rows of R~ per centre type, padding rows counted as zeros
  std::vector<std::vector<std::array<double, 4>>> rows(2);
  for (std::int64_t i = 0; i < c.natoms(); ++i) {
    for (std::int64_t s = 0; s < mc.nnei(); ++s) {
      std::array<double, 4> row{0, 0, 0, 0};
      const auto j = nl.index[i * mc.nnei() + s];
      if (j >= 0) {
        double r[3], len2 = 0;
        for (int a = 0; a < 3; ++a) {
          r[a] = c.coord[3 * j + a] + nl.shift[(i * mc.nnei() + s) * 3 + a] - c.coord[3 * i + a];
          len2 += r[a] * r[a];
        }
        const double len = std::sqrt(len2);
        const double sw = switch_w(len, mc.rcut, mc.rcut_smth) / len;
        row = {sw, sw * r[0] / len, sw * r[1] / len, sw * r[2] / len};
      }
      rows[c.types[i]].push_back(row);
    }
  }
  const auto in = make_inputs(c, mc);
  const auto env =
      environment_matrix(pair_vectors(in.coord, in.nlist, in.shift, mc.rcut), mc.rcut, mc.rcut_smth);
  // accumulate in two halves of the atoms, merged, to exercise merge()
  StatisticsSums a(2), b(2);
  const auto half = c.natoms() / 2;
  a.add_environment(env.narrow(1, 0, half), in.atype.narrow(1, 0, half));
  b.add_environment(env.narrow(1, half, c.natoms() - half), in.atype.narrow(1, half, c.natoms() - half));
  a.merge(b);
  const auto [davg, dstd] = a.descriptor_statistics(mc.nnei());
  for (int t = 0; t < 2; ++t) {
    double n = 0, s0 = 0, q0 = 0, s1 = 0, q1 = 0;
    for (const auto& r : rows[t]) {
      n += 1;
      s0 += r[0];
      q0 += r[0] * r[0];
      for (int k = 1; k < 4; ++k) {
        s1 += r[k];
        q1 += r[k] * r[k];
      }
    }
    const double mean0 = s0 / n;
    const double std0 = std::max(std::sqrt(q0 / n - mean0 * mean0), 1e-2);
    const double std1 = std::max(std::sqrt(q1 / (3 * n) - (s1 / (3 * n)) * (s1 / (3 * n))), 1e-2);
    INFO("centre type " << t);
    CHECK(mean0 > 0);
    for (std::int64_t s = 0; s < mc.nnei(); ++s) {
      CHECK(davg[t][s][0].item<double>() == Approx(mean0).epsilon(1e-12));
      CHECK(davg[t][s].narrow(0, 1, 3).abs().max().item<double>() == 0.0);
      CHECK(dstd[t][s][0].item<double>() == Approx(std0).epsilon(1e-12));
      for (int k = 1; k < 4; ++k) CHECK(dstd[t][s][k].item<double>() == Approx(std1).epsilon(1e-12));
    }
  }
  // pack / unpack round trip
  StatisticsSums c2(2);
  c2.unpack(a.pack());
  CHECK(c2.pack() == a.pack());
}

TEST_CASE("energy bias solves an exactly solvable least-squares system", "[model]") {
  // frames with (nA, nB) atoms and energies E = -3.5 nA - 1.25 nB
  StatisticsSums s(3);
  auto add = [&](const std::vector<int64_t>& types_row, int nframes) {
    const auto t = torch::tensor(types_row, torch::kInt64).view({1, -1}).expand({nframes, -1});
    const auto na = static_cast<double>(std::count(types_row.begin(), types_row.end(), 0));
    const auto nb = static_cast<double>(std::count(types_row.begin(), types_row.end(), 1));
    s.add_energy(torch::full({nframes}, -3.5 * na - 1.25 * nb, torch::kFloat64), t);
  };
  add({0, 1, 1}, 2);
  add({0, 0, 1, 1, 1}, 1);
  add({1, 1, 1, 1}, 3);
  const auto bias = s.energy_bias({"A", "B", "C"});
  CHECK(bias.bias[0].item<double>() == Approx(-3.5).epsilon(1e-10));
  CHECK(bias.bias[1].item<double>() == Approx(-1.25).epsilon(1e-10));
  CHECK(bias.bias[2].item<double>() == 0.0);
  REQUIRE(bias.warnings.size() == 1);
  CHECK_THAT(bias.warnings[0], Catch::Contains("'C'"));
  // one composition only (as in water): the minimum-norm solution b = c (c.b = e/|c|^2 ... ) reproduces E
  StatisticsSums w(2);
  const auto types = torch::tensor(std::vector<int64_t>{0, 1, 1}, torch::kInt64).view({1, 3}).expand({4, 3});
  w.add_energy(torch::tensor({-10.0, -10.2, -9.8, -10.0}, torch::kFloat64), types);
  const auto wb = w.energy_bias({"O", "H"}).bias;
  // min-norm: b = mean(E) c / |c|^2 with c = (1, 2)
  CHECK(wb[0].item<double>() == Approx(-10.0 / 5).epsilon(1e-10));
  CHECK(wb[1].item<double>() == Approx(-20.0 / 5).epsilon(1e-10));
}
