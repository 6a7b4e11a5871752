// The trust window, the distance between frames and the choice of candidates.
#include <cmath>
#include <set>

#include "src/learn/FrameSelection.hpp"
#include "tests/support/Catch.hpp"

using namespace deepkf;

namespace {

// n frames of 4 Si atoms in a 5 A cubic cell, frame f displaced along x by f * step (A) for every atom but
// atom 0, which stays.
System frames(int n, double step) {
  System s;
  s.source = "test";
  s.type_map = {"Si"};
  s.atom_types = {0, 0, 0, 0};
  s.natoms = 4;
  s.nframes = n;
  const double base[12] = {0, 0, 0, 2.5, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 2.5};
  for (int f = 0; f < n; ++f) {
    for (int i = 0; i < 4; ++i)
      for (int d = 0; d < 3; ++d) s.coord.push_back(base[3 * i + d] + (i > 0 && d == 0 ? f * step : 0.0));
    s.box.insert(s.box.end(), {5, 0, 0, 0, 5, 0, 0, 0, 5});
  }
  return s;
}

}  // namespace

TEST_CASE("frames fall into accurate, candidate and failed by the trust window", "[learn][select]") {
  const std::vector<std::vector<double>> scores = {{0.01, 0.05, 0.2, 0.29, 0.3}, {}, {1.0, NAN, 0.1}};
  std::vector<FrameRef> candidates;
  const SelectionCounts n = classify_frames(scores, 0.05, 0.3, candidates);
  CHECK(n.explored == 8);
  CHECK(n.accurate == 1);   // 0.01
  CHECK(n.candidate == 4);  // 0.05 (lo is inside), 0.2, 0.29, 0.1
  CHECK(n.failed == 3);     // 0.3 (hi is outside), 1.0, nan
  CHECK(n.candidate_fraction() == Approx(0.5));
  REQUIRE(candidates.size() == 4);
  CHECK((candidates[3].run == 2 && candidates[3].frame == 2 && candidates[3].score == 0.1));
  CHECK(median_score(scores) == Approx(0.2));  // finite scores 0.01 0.05 0.1 0.2 0.29 0.3 1.0
}

TEST_CASE("the distance between frames is the RMS minimum-image displacement", "[learn][select]") {
  const System s = frames(3, 0.2);
  // Three of four atoms moved 0.2 A: sqrt(3 * 0.04 / 4).
  CHECK(frame_distance(s, 0, s, 1) == Approx(std::sqrt(0.03)));
  CHECK(frame_distance(s, 0, s, 0) == 0.0);
  // A whole lattice vector is no displacement.
  System shifted = s;
  for (std::size_t k = 0; k < shifted.coord.size(); k += 3) shifted.coord[k + 2] += 5.0;
  CHECK(frame_distance(s, 2, shifted, 2) == Approx(0.0).margin(1e-12));
  // Other atoms: never duplicates.
  System other = s;
  other.atom_types = {0, 0, 0, 1};
  other.type_map = {"Si", "C"};
  CHECK(std::isinf(frame_distance(s, 0, other, 0)));
}

TEST_CASE("candidates are taken in a seeded order, without near-duplicates, up to the cap",
          "[learn][select]") {
  // 10 frames 0.04 A apart along a line (frame distance 0.0346 per step).
  const System s = frames(10, 0.04);
  std::vector<FrameRef> candidates;
  for (int f = 0; f < 10; ++f) candidates.push_back({0, f, 0.1});
  const std::vector<const System*> runs = {&s};

  const auto all = pick_candidates(candidates, runs, 100, 0.0, 1);
  CHECK(all.size() == 10);
  CHECK(pick_candidates(candidates, runs, 100, 0.0, 1)[0].frame == all[0].frame);  // same seed, same order
  bool order_differs = false;
  for (std::uint64_t seed = 2; seed < 6; ++seed)
    order_differs |= pick_candidates(candidates, runs, 100, 0.0, seed)[0].frame != all[0].frame;
  CHECK(order_differs);
  CHECK(pick_candidates(candidates, runs, 3, 0.0, 1).size() == 3);

  // Frames closer than 0.1 A to one taken are skipped: every pair taken is at least 0.1 apart.
  const auto spread = pick_candidates(candidates, runs, 100, 0.1, 1);
  CHECK(spread.size() >= 3);
  CHECK(spread.size() <= 4);  // 10 frames spanning 0.31 A hold at most 4 points 0.1 apart
  for (std::size_t a = 0; a < spread.size(); ++a)
    for (std::size_t b = a + 1; b < spread.size(); ++b)
      CHECK(frame_distance(s, spread[a].frame, s, spread[b].frame) >= 0.1);
}
