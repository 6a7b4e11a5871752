// The inference entry point: atoms with neighbour candidates given (pair_style deepkf's form) against whole
// periodic frames, on a model file written here.
#include <cmath>
#include <vector>

#include "src/eval/Potential.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

TEST_CASE("atoms with their periodic images as neighbour candidates give the periodic frame's results",
          "[eval][potential]") {
  const auto dir = make_temp_dir("potential");
  const std::vector<double> h = {7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1};  // wider than 2 rcut (3 A)
  for (const char* descriptor : {"se_e2_a", "se_atten"}) {
    INFO(descriptor);
    const auto path = dir + "/" + descriptor + ".pt";
    save_model(path, small_model(false, true, torch::kFloat64, descriptor), {});
    const Potential potential(path);
    const auto cell = jittered_cell(h, 3, 2, 5);
    const auto n = static_cast<std::int64_t>(cell.types.size());

    PotentialFrames frames;
    frames.nframes = 1;
    frames.natoms = n;
    frames.coord = cell.coord;
    frames.box = h;
    frames.atom_types = cell.types;
    PotentialOptions atomic;
    atomic.atomic = true;
    const auto ref = potential.evaluate(frames, atomic);

    // The n atoms, then their 26 images shifted by a cell vector each; every atom is a candidate of every
    // centre (the entry point keeps those within rcut).
    std::vector<double> x(cell.coord);
    std::vector<int> types(cell.types);
    std::vector<std::int64_t> owner;
    for (int a = -1; a <= 1; ++a)
      for (int b = -1; b <= 1; ++b)
        for (int c = -1; c <= 1; ++c) {
          if (a == 0 && b == 0 && c == 0) continue;
          for (std::int64_t i = 0; i < n; ++i) {
            for (int d = 0; d < 3; ++d)
              x.push_back(cell.coord[3 * i + d] + a * h[d] + b * h[3 + d] + c * h[6 + d]);
            types.push_back(cell.types[i]);
            owner.push_back(i);
          }
        }
    const auto nall = static_cast<std::int64_t>(types.size());
    std::vector<std::int64_t> offset = {0}, neigh;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < nall; ++j)
        if (j != i) neigh.push_back(j);
      offset.push_back(static_cast<std::int64_t>(neigh.size()));
    }
    NeighbourAtoms atoms;
    atoms.natoms = nall;
    atoms.ncentre = n;
    atoms.coord = x.data();
    atoms.types = types.data();
    atoms.offset = offset.data();
    atoms.neigh = neigh.data();
    const auto out = potential.evaluate(atoms, atomic);

    REQUIRE(out.energy.size() == 1);
    REQUIRE(out.atom_energy.size() == static_cast<std::size_t>(n));
    REQUIRE(out.force.size() == static_cast<std::size_t>(3 * nall));
    REQUIRE(out.atom_virial.size() == static_cast<std::size_t>(9 * nall));
    CHECK(std::abs(out.energy[0] - ref.energy[0]) <= 1e-10 * std::abs(ref.energy[0]));
    CHECK(max_abs_difference(out.atom_energy, ref.atom_energy) <= 1e-12);
    // The images' forces act on their owners.
    std::vector<double> folded(out.force.begin(), out.force.begin() + 3 * n);
    for (std::size_t g = 0; g < owner.size(); ++g)
      for (int d = 0; d < 3; ++d) folded[3 * owner[g] + d] += out.force[3 * (n + g) + d];
    CHECK(max_abs_difference(folded, ref.force) <= 1e-10);
    CHECK(max_abs_difference(out.virial, ref.virial) <= 1e-10);
    std::vector<double> summed(9, 0.0);
    for (std::int64_t k = 0; k < nall; ++k)
      for (int e = 0; e < 9; ++e) summed[e] += out.atom_virial[9 * k + e];
    CHECK(max_abs_difference(summed, ref.virial) <= 1e-10);
    CHECK(out.beyond_table == 0);
  }
}
