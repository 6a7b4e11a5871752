#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/geometry/NeighborList.hpp"
#include "tests/geometry/BruteForceNeighbors.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using deepkf::NeighborList;
using namespace deepkf::test::neighbors;  // the brute-force reference and its checks

namespace {

// ---------------------------------------------------------------------------------------------------------
// A minimal .npy reader for the dataset test: little-endian float32/float64, C order.
std::vector<double> read_npy(const std::string& path, std::vector<std::int64_t>& shape) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  char magic[8];
  in.read(magic, 8);
  REQUIRE(std::memcmp(magic, "\x93NUMPY", 6) == 0);
  std::uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  }
  std::string header(hlen, ' ');
  in.read(&header[0], hlen);
  REQUIRE(header.find("'fortran_order': False") != std::string::npos);
  const bool f4 = header.find("'<f4'") != std::string::npos;
  REQUIRE((f4 || header.find("'<f8'") != std::string::npos));
  const auto open = header.find('(', header.find("'shape'"));
  const auto close = header.find(')', open);
  shape.clear();
  std::int64_t total = 1;
  std::string dims = header.substr(open + 1, close - open - 1);
  for (std::size_t p = 0; p < dims.size();) {
    const auto comma = dims.find(',', p);
    const std::string tok = dims.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    if (tok.find_first_of("0123456789") != std::string::npos) {
      shape.push_back(std::stoll(tok));
      total *= shape.back();
    }
    if (comma == std::string::npos) break;
    p = comma + 1;
  }
  std::vector<double> out(static_cast<std::size_t>(total));
  if (f4) {
    std::vector<float> tmp(out.size());
    in.read(reinterpret_cast<char*>(tmp.data()), static_cast<std::streamsize>(tmp.size() * sizeof(float)));
    std::copy(tmp.begin(), tmp.end(), out.begin());
  } else {
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(double)));
  }
  REQUIRE(in.good());
  return out;
}

// Frame 0 of water/data_0: 192 atoms, types from type.raw (0 = O, 1 = H).
System water_frame0() {
  const std::string dir = deepkf::test::require_shared_dataset("water/data_0");
  std::vector<std::int64_t> shape;
  const auto coord = read_npy(dir + "/set.000/coord.npy", shape);
  const std::int64_t natoms = shape.at(1) / 3;
  const auto box = read_npy(dir + "/set.000/box.npy", shape);
  System sys;
  sys.x.assign(coord.begin(), coord.begin() + 3 * natoms);
  sys.box.assign(box.begin(), box.begin() + 9);
  std::ifstream tin(dir + "/type.raw");
  int t = 0;
  while (tin >> t) sys.types.push_back(t);
  REQUIRE(sys.natoms() == natoms);
  return sys;
}

// The system repeated rep x rep x rep times (a supercell).
System replicate(const System& sys, int rep) {
  System out;
  for (int d = 0; d < 9; ++d) out.box.push_back(sys.box[d] * rep);
  for (int a = 0; a < rep; ++a)
    for (int b = 0; b < rep; ++b)
      for (int c = 0; c < rep; ++c)
        for (std::int64_t i = 0; i < sys.natoms(); ++i) {
          for (int d = 0; d < 3; ++d) {
            out.x.push_back(sys.x[3 * i + d] + a * sys.box[d] + b * sys.box[3 + d] + c * sys.box[6 + d]);
          }
          out.types.push_back(sys.types[i]);
        }
  return out;
}

}  // namespace

TEST_CASE("neighbour list matches brute force on random triclinic cells", "[geometry][neighbor]") {
  std::mt19937_64 rng(20240607);
  std::uniform_real_distribution<double> rc(2.5, 6.0);
  SECTION("ordinary cells, 1 to 3 types") {
    for (int trial = 0; trial < 20; ++trial) {
      const double rcut = rc(rng);
      const int ntypes = 1 + trial % 3;
      const System sys =
          random_system(rng, random_box(rng, 6.0, 14.0, 0.2), 10 + 3 * trial, ntypes, 0.0, 1.0);
      check_system(sys, rcut, ntypes, "ordinary cell trial " + std::to_string(trial));
    }
  }
  SECTION("strongly skewed cells") {
    for (int trial = 0; trial < 12; ++trial) {
      const System sys = random_system(rng, random_box(rng, 5.0, 12.0, 0.9), 25, 2, 0.0, 1.0);
      check_system(sys, rc(rng), 2, "skewed cell trial " + std::to_string(trial));
    }
  }
  SECTION("tiny cells (perpendicular widths below rcut / 2)") {
    for (int trial = 0; trial < 10; ++trial) {
      const System sys = random_system(rng, random_box(rng, 1.2, 2.8, 0.3), 1 + trial % 4, 2, 0.0, 1.0);
      check_system(sys, 6.0, 2, "tiny cell trial " + std::to_string(trial));
    }
  }
  SECTION("mixed: one direction thin, others wide") {
    for (int trial = 0; trial < 6; ++trial) {
      auto box = random_box(rng, 9.0, 16.0, 0.3);
      for (int d = 0; d < 3; ++d) box[3 * (trial % 3) + d] *= 0.15;
      const System sys = random_system(rng, box, 12, 2, 0.0, 1.0);
      check_system(sys, 4.5, 2, "thin-slab trial " + std::to_string(trial));
    }
  }
  SECTION("cells larger than 4 rcut (several bins per direction)") {
    for (int trial = 0; trial < 4; ++trial) {
      const System sys = random_system(rng, random_box(rng, 14.0, 18.0, 0.3), 200, 2, 0.0, 1.0);
      check_system(sys, 3.2, 2, "large cell trial " + std::to_string(trial));
    }
  }
  SECTION("atoms outside the cell (unwrapped coordinates)") {
    for (int trial = 0; trial < 10; ++trial) {
      const System sys = random_system(rng, random_box(rng, 3.0, 10.0, 0.5), 20, 2, -2.5, 3.5);
      check_system(sys, rc(rng), 2, "outside-the-cell trial " + std::to_string(trial));
    }
  }
  SECTION("a few atoms in a huge cell (bin count capped), neighbours across the periodic faces") {
    // Atoms within about +-6 A of a corner: unwrapped, half of them wrap to the far side of the cell.
    const System sys = random_system(rng, random_box(rng, 150.0, 200.0, 0.2), 40, 2, -0.03, 0.03);
    const auto maxc = check_system(sys, 5.0, 2, "huge cell");
    CHECK(maxc[0] + maxc[1] >= 5);
  }
}

TEST_CASE("neighbour list of a non-periodic cluster matches brute force", "[geometry][neighbor]") {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 8; ++trial) {
    System sys;
    std::uniform_real_distribution<double> u(-6.0 - trial, 6.0 + 2 * trial);
    const std::int64_t n = 5 + 10 * trial;
    for (std::int64_t a = 0; a < n; ++a) {
      for (int d = 0; d < 3; ++d) sys.x.push_back(u(rng) * (d == trial % 3 ? 0.05 : 1.0));
      sys.types.push_back(static_cast<int>(a % 3));
    }
    check_system(sys, 4.0, 3, "cluster trial " + std::to_string(trial));
  }
  SECTION("no images: two atoms 3 A apart in a non-periodic system") {
    const double x[6] = {0, 0, 0, 3, 0, 0};
    const int types[2] = {0, 0};
    const auto nl = deepkf::build_neighbor_list(x, 2, types, nullptr, 6.0, {4});
    CHECK(nl.index == std::vector<std::int64_t>{1, -1, -1, -1, 0, -1, -1, -1});
    CHECK(nl.max_count == std::vector<std::int64_t>{1});
  }
}

TEST_CASE("a single atom in a small cubic cell sees its own images", "[geometry][neighbor]") {
  // Cubic cell of side 2 A, rcut 6: the images are the lattice points n != 0 with |2n| < 6, i.e.
  // |n|^2 <= 8. Counting points per |n|^2 = 1, 2, 3, 4, 5, 6, 8: 6 + 12 + 8 + 6 + 24 + 24 + 12 = 92.
  const double box[9] = {2, 0, 0, 0, 2, 0, 0, 0, 2};
  const double x[3] = {0.3, -0.7, 5.1};  // outside the cell on purpose
  const int types[1] = {0};
  const auto nl = deepkf::build_neighbor_list(x, 1, types, box, 6.0, {100});
  REQUIRE(nl.max_count == std::vector<std::int64_t>{92});
  CHECK(nl.ndropped == 0);
  for (int p = 0; p < 100; ++p) CHECK(nl.index[p] == (p < 92 ? 0 : -1));
  // First six are the face neighbours at exactly 2 A, then the 12 at 2 sqrt 2.
  for (int p = 0; p < 18; ++p) {
    const double* s = nl.shift.data() + 3 * p;
    const double r = std::sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    CHECK(r == Approx(p < 6 ? 2.0 : 2.0 * std::sqrt(2.0)));
  }
  System sys;
  sys.x.assign(x, x + 3);
  sys.types = {0};
  sys.box.assign(box, box + 9);
  check_system(sys, 6.0, 1, "single atom");
  // Ties are broken deterministically: a second build gives the same slots.
  const auto again = deepkf::build_neighbor_list(x, 1, types, box, 6.0, {100});
  CHECK(again.shift == nl.shift);
}

TEST_CASE("sort_neighbors on explicit ghost atoms agrees with build_neighbor_list", "[geometry][neighbor]") {
  std::mt19937_64 rng(4242);
  for (int trial = 0; trial < 6; ++trial) {
    const double rcut = 4.0;
    // Trials 0-2: cells wider than 2 rcut; 3-5: cells narrower than rcut (many images of each atom).
    const auto box = trial < 3 ? random_box(rng, 9.0, 12.0, 0.3) : random_box(rng, 2.5, 3.5, 0.3);
    const System sys = random_system(rng, box, 15, 2, -0.5, 1.5);
    const std::int64_t nloc = sys.natoms();
    // Extended system: the local atoms first, then every image n != 0 in [-K, K]^3 as ghosts.
    const int K = trial < 3 ? 2 : 4;
    std::vector<double> xe(sys.x);
    std::vector<int> te(sys.types);
    std::vector<std::int64_t> owner;
    for (std::int64_t i = 0; i < nloc; ++i) owner.push_back(i);
    for (int n0 = -K; n0 <= K; ++n0)
      for (int n1 = -K; n1 <= K; ++n1)
        for (int n2 = -K; n2 <= K; ++n2) {
          if (n0 == 0 && n1 == 0 && n2 == 0) continue;
          for (std::int64_t j = 0; j < nloc; ++j) {
            for (int d = 0; d < 3; ++d)
              xe.push_back(sys.x[3 * j + d] + n0 * box[d] + n1 * box[3 + d] + n2 * box[6 + d]);
            te.push_back(sys.types[j]);
            owner.push_back(j);
          }
        }
    const std::int64_t nall = static_cast<std::int64_t>(te.size());
    // Every extended atom is a candidate of every centre (LAMMPS would pre-filter by a skin distance).
    std::vector<std::int64_t> offset(nloc + 1), neigh;
    for (std::int64_t i = 0; i < nloc; ++i) {
      offset[i] = static_cast<std::int64_t>(neigh.size());
      for (std::int64_t j = 0; j < nall; ++j) neigh.push_back(j);
    }
    offset[nloc] = static_cast<std::int64_t>(neigh.size());

    const Reference ref = brute_force(sys, rcut, 2);
    const auto maxc = ref_max_counts(ref, 2);
    const std::vector<int> sel = {static_cast<int>(maxc[0]) + 2, static_cast<int>(maxc[1]) + 2};
    const NeighborList built =
        deepkf::build_neighbor_list(sys.x.data(), nloc, sys.types.data(), sys.box_ptr(), rcut, sel);
    const NeighborList sorted =
        deepkf::sort_neighbors(xe.data(), te.data(), nloc, offset.data(), neigh.data(), rcut, sel);

    // LAMMPS-style arrays give the same result.
    std::vector<int> numneigh(nloc);
    std::vector<std::vector<int>> lists(nloc);
    std::vector<const int*> firstneigh(nloc);
    for (std::int64_t i = 0; i < nloc; ++i) {
      for (std::int64_t p = offset[i]; p < offset[i + 1]; ++p) lists[i].push_back(static_cast<int>(neigh[p]));
      numneigh[i] = static_cast<int>(lists[i].size());
      firstneigh[i] = lists[i].data();
    }
    const NeighborList lmp =
        deepkf::sort_neighbors(xe.data(), te.data(), nloc, numneigh.data(), firstneigh.data(), rcut, sel);
    CHECK(lmp.index == sorted.index);

    REQUIRE(sorted.nnei == built.nnei);
    CHECK(sorted.max_count == built.max_count);
    CHECK(sorted.ndropped == 0);
    for (double s : sorted.shift) CHECK(s == 0.0);
    // Map ghosts back to (owner, shift) and compare with the periodic list slot by slot; where distances
    // tie exactly, the ghost order may differ, so compare within a distance tie by the brute-force check.
    NeighborList mapped = sorted;
    for (std::size_t p = 0; p < sorted.index.size(); ++p) {
      const std::int64_t g = sorted.index[p];
      if (g < 0) continue;
      mapped.index[p] = owner[g];
      for (int d = 0; d < 3; ++d) mapped.shift[3 * p + d] = xe[3 * g + d] - sys.x[3 * owner[g] + d];
    }
    compare(mapped, ref, sys, sel, "sort_neighbors trial " + std::to_string(trial));
    compare(built, ref, sys, sel, "build_neighbor_list trial " + std::to_string(trial));
  }
}

TEST_CASE("neighbour list input errors", "[geometry][neighbor]") {
  using Catch::Matchers::Contains;
  const double x[6] = {0, 0, 0, 1, 0, 0};
  const double box[9] = {5, 0, 0, 0, 5, 0, 0, 0, 5};
  const int bad_types[2] = {0, 2};
  CHECK_THROWS_AS(deepkf::build_neighbor_list(x, 2, bad_types, box, 3.0, {4, 4}), deepkf::DataError);
  CHECK_THROWS_WITH(deepkf::build_neighbor_list(x, 2, bad_types, box, 3.0, {4, 4}),
                    Contains("atom 1 has type 2"));
  const int types[2] = {0, 1};
  CHECK_THROWS_AS(deepkf::build_neighbor_list(x, 2, types, box, 0.0, {4, 4}), deepkf::ConfigError);
  CHECK_THROWS_AS(deepkf::build_neighbor_list(x, 2, types, box, 3.0, {4, -1}), deepkf::ConfigError);
  const double nan_x[6] = {0, 0, 0, 1, std::numeric_limits<double>::quiet_NaN(), 0};
  CHECK_THROWS_WITH(deepkf::build_neighbor_list(nan_x, 2, types, box, 3.0, {4, 4}),
                    Contains("atom 1") && Contains("not finite"));
  const double far_x[6] = {0, 0, 0, 1e12, 0, 0};
  CHECK_THROWS_WITH(deepkf::build_neighbor_list(far_x, 2, types, box, 3.0, {4, 4}),
                    Contains("atom 1") && Contains("outside the cell"));
  const double flat[9] = {5, 0, 0, 0, 5, 0, 5, 5, 0};
  CHECK_THROWS_AS(deepkf::build_neighbor_list(x, 2, types, flat, 3.0, {4, 4}), deepkf::DataError);
}

TEST_CASE("auto_sel is ceil(1.1 max) rounded up to a multiple of 4", "[geometry][neighbor]") {
  // 40 -> 44 exactly (not 48: 1.1 * 40 is 44.000000000000007 in floating point); 41 -> 45.1 -> 46 -> 48;
  // 10 -> 11 -> 12; 1 -> 1.1 -> 2 -> 4; 0 -> 0; 42 -> 46.2 -> 47 -> 48; 83 -> 91.3 -> 92 -> 92.
  CHECK(deepkf::auto_sel({40, 41, 10, 1, 0, 42, 83}) == std::vector<int>{44, 48, 12, 4, 0, 48, 92});
  // Every count up to 10^5 against integer arithmetic: ceil(1.1 m) = (11 m + 9) / 10.
  for (std::int64_t m = 0; m <= 100000; m += 7) {
    const auto scaled = (11 * m + 9) / 10;
    REQUIRE(deepkf::auto_sel({m})[0] == static_cast<int>((scaled + 3) / 4 * 4));
  }
  // "auto:1.5": 40 -> 60 -> 60; 41 -> 61.5 -> 62 -> 64. A factor that is not positive is refused.
  CHECK(deepkf::auto_sel({40, 41}, 1.5) == std::vector<int>{60, 64});
  CHECK_THROWS_AS(deepkf::auto_sel({40}, 0.0), deepkf::ConfigError);
}

TEST_CASE("water data_0 frame 0: neighbour counts fit the reference sel and O(N) timing",
          "[geometry][neighbor][dataset]") {
  const System water = water_frame0();
  REQUIRE(water.natoms() == 192);
  const double rcut = 6.0;
  const auto counts = deepkf::max_neighbor_counts(water.x.data(), water.natoms(), water.types.data(), 2,
                                                  water.box_ptr(), rcut);
  const Reference ref = brute_force(water, rcut, 2);
  CHECK(counts == ref_max_counts(ref, 2));
  INFO("max neighbour counts O " << counts[0] << ", H " << counts[1]);
  CHECK(counts[0] <= 46);
  CHECK(counts[1] <= 92);
  // Liquid water at ~1 g/cm^3 has about 0.0334 molecules/A^3: 4/3 pi 6^3 * 0.0334 ~ 30 O and 60 H.
  CHECK(counts[0] >= 25);
  CHECK(counts[1] >= 50);
  const std::vector<int> sel = {46, 92};
  const NeighborList nl = deepkf::build_neighbor_list(water.x.data(), water.natoms(), water.types.data(),
                                                      water.box_ptr(), rcut, sel);
  compare(nl, ref, water, sel, "water frame 0");
  std::printf("water data_0 frame 0: max neighbour counts O %lld, H %lld; auto sel [%d, %d]\n",
              static_cast<long long>(counts[0]), static_cast<long long>(counts[1]),
              deepkf::auto_sel(counts)[0], deepkf::auto_sel(counts)[1]);

  // Supercells keep every atom's environment, so the maxima stay the same; time per atom should be flat.
  for (int rep : {1, 2, 4}) {
    const System big = replicate(water, rep);
    const int reps = rep == 4 ? 3 : 20;
    NeighborList out;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      out =
          deepkf::build_neighbor_list(big.x.data(), big.natoms(), big.types.data(), big.box_ptr(), rcut, sel);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf(
        "build_neighbor_list: %lld atoms (%dx%dx%d water), rcut 6, sel [46, 92]: %.2f ms, %.3f us/atom\n",
        static_cast<long long>(big.natoms()), rep, rep, rep, ms, 1000.0 * ms / big.natoms());
    CHECK(out.max_count == counts);
    CHECK(out.ndropped == 0);
  }
}
