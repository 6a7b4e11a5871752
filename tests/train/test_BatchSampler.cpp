#include <map>
#include <set>

#include "src/core/Random.hpp"
#include "src/train/BatchSampler.hpp"
#include "tests/support/Catch.hpp"

using deepkf::BatchRef;
using deepkf::BatchSampler;

TEST_CASE("uniform_below is unbiased enough and in range", "[train][random]") {
  std::mt19937_64 rng(7);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) {
    const auto x = deepkf::uniform_below(rng, 6);
    REQUIRE(x < 6);
    ++counts[x];
  }
  // Expected 10000 each; 5 sigma is 5 * sqrt(10000 * 5/6) ~ 456.
  for (int c : counts) CHECK(std::abs(c - 10000) < 456);
  std::mt19937_64 one(3);
  CHECK(deepkf::uniform_below(one, 1) == 0);
}

TEST_CASE("an epoch visits every frame once, in batches of each system's size", "[train][sampler]") {
  BatchSampler sampler({10, 3, 7}, {4, 2, 7}, 42);
  // batches: ceil(10/4) + ceil(3/2) + ceil(7/7) = 3 + 2 + 1
  REQUIRE(sampler.batches_per_epoch() == 6);
  std::map<int, std::multiset<std::int64_t>> seen;
  for (int i = 0; i < 6; ++i) {
    const BatchRef b = sampler.next();
    const int expected_max = b.system == 0 ? 4 : (b.system == 1 ? 2 : 7);
    CHECK(static_cast<int>(b.frames.size()) <= expected_max);
    seen[b.system].insert(b.frames.begin(), b.frames.end());
  }
  CHECK(sampler.epoch() == 0);
  const std::int64_t sizes[3] = {10, 3, 7};
  for (int s = 0; s < 3; ++s) {
    REQUIRE(seen[s].size() == static_cast<std::size_t>(sizes[s]));
    std::int64_t f = 0;
    for (auto x : seen[s]) CHECK(x == f++);  // each frame exactly once
  }
  sampler.next();
  CHECK(sampler.epoch() == 1);
}

TEST_CASE("the order depends on the seed and the epoch, and seek replays it exactly", "[train][sampler]") {
  BatchSampler a({50, 20}, {3, 5}, 1);
  BatchSampler b({50, 20}, {3, 5}, 1);
  BatchSampler other({50, 20}, {3, 5}, 2);
  std::vector<BatchRef> run;
  bool differs_from_other_seed = false;
  for (int i = 0; i < 60; ++i) {
    run.push_back(a.next());
    const BatchRef y = b.next();
    CHECK(run.back().frames == y.frames);
    differs_from_other_seed |= other.next().frames != run.back().frames;
  }
  CHECK(differs_from_other_seed);
  // Epoch 0 and epoch 1 are different permutations.
  const auto per_epoch = a.batches_per_epoch();
  bool epochs_differ = false;
  for (std::int64_t i = 0; i < per_epoch; ++i) {
    epochs_differ |=
        run[static_cast<std::size_t>(i)].frames != run[static_cast<std::size_t>(i + per_epoch)].frames;
  }
  CHECK(epochs_differ);
  // Resume at (epoch 1, batch 5) and get the same batches as the uninterrupted run.
  BatchSampler resumed({50, 20}, {3, 5}, 1);
  resumed.seek(1, 5);
  for (std::int64_t i = per_epoch + 5; i < 60; ++i) {
    const BatchRef r = resumed.next();
    CHECK(r.system == run[static_cast<std::size_t>(i)].system);
    CHECK(r.frames == run[static_cast<std::size_t>(i)].frames);
  }
}

TEST_CASE("bad sampler input is refused", "[train][sampler]") {
  CHECK_THROWS_WITH(BatchSampler({}, {}, 1), "no training systems to sample from");
  CHECK_THROWS_WITH(BatchSampler({5, 0}, {1, 1}, 1), "training system 1 has no frames");
  BatchSampler s({4}, {2}, 1);
  CHECK_THROWS_WITH(s.seek(0, 3), Catch::Matchers::Contains("the training data changed"));
}

TEST_CASE("a system with repeat r has every frame visited r times per epoch", "[train][sampler]") {
  BatchSampler sampler({6, 4}, {4, 3}, 9, {1, 3});
  // ceil(6/4) + ceil(12/3) batches: system 1's 4 frames three times over.
  REQUIRE(sampler.batches_per_epoch() == 2 + 4);
  std::map<int, std::map<std::int64_t, int>> visits;
  for (int i = 0; i < 6; ++i) {
    const BatchRef b = sampler.next();
    for (auto f : b.frames) ++visits[b.system][f];
  }
  for (std::int64_t f = 0; f < 6; ++f) CHECK(visits[0][f] == 1);
  for (std::int64_t f = 0; f < 4; ++f) CHECK(visits[1][f] == 3);
  CHECK(sampler.epoch() == 0);
  // Repeats of 1 are the plain order: a run without repeats keeps its data order.
  BatchSampler plain({50, 20}, {3, 5}, 1);
  BatchSampler ones({50, 20}, {3, 5}, 1, {1, 1});
  for (int i = 0; i < 40; ++i) CHECK(plain.next().frames == ones.next().frames);
  CHECK_THROWS_WITH(BatchSampler({5, 5}, {1, 1}, 1, {1}),
                    "repeat counts given for 1 systems, but there are 2");
  CHECK_THROWS_WITH(BatchSampler({5, 5}, {1, 1}, 1, {1, 0}), "repeat count of system 1 must be positive");
}
