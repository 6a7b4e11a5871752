// How often each training system is drawn (training_data.sys_probs, auto_prob): the probabilities from
// DeePMD-kit's definitions worked out by hand, its errors, and the sampler's share of each epoch.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/train/BatchSampler.hpp"
#include "src/train/SystemProbabilities.hpp"
#include "tests/support/Catch.hpp"

using deepkf::BatchSampler;
using deepkf::ConfigError;

namespace {

std::vector<double> probs(const std::vector<double>& sys_probs, const std::string& auto_prob,
                          const std::vector<std::int64_t>& batches) {
  return deepkf::system_probabilities(sys_probs, auto_prob, batches, "training.training_data", "in.json");
}

std::string error_of(const std::vector<double>& sys_probs, const std::string& auto_prob,
                     const std::vector<std::int64_t>& batches) {
  try {
    probs(sys_probs, auto_prob, batches);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

void check_near(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t s = 0; s < got.size(); ++s) {
    INFO("system " << s);
    CHECK(std::abs(got[s] - want[s]) <= 1e-12);
  }
}

}  // namespace

TEST_CASE("system probabilities follow DeePMD-kit's sys_probs and auto_prob", "[train][sampler][probs]") {
  const std::vector<std::int64_t> batches = {10, 30, 20, 20};
  // Neither key, or plain prob_sys_size (a share by batches): the unweighted order.
  CHECK(probs({}, "", batches).empty());
  CHECK(probs({}, "prob_sys_size", batches).empty());
  check_near(probs({}, "prob_uniform", batches), {0.25, 0.25, 0.25, 0.25});
  // Blocks [0, 2) and [2, 4) with weights 1 and 3: 1/4 shared 10:30, 3/4 shared 20:20.
  check_near(probs({}, "prob_sys_size;0:2:1;2:4:3", batches), {1.0 / 16, 3.0 / 16, 3.0 / 8, 3.0 / 8});
  // A system in no block is never drawn; weights are normalised over the blocks.
  check_near(probs({}, "prob_sys_size;1:3:0.5", batches), {0.0, 0.6, 0.4, 0.0});
  // sys_probs wins over auto_prob; negative entries share what is left by their batches.
  check_near(probs({0.1, 0.2, 0.3, 0.4}, "prob_uniform", batches), {0.1, 0.2, 0.3, 0.4});
  check_near(probs({0.5, -1, -1, 0.1}, "", batches), {0.5, 0.4 * 30 / 50, 0.4 * 20 / 50, 0.1});
  check_near(probs({1.0, -1, 0, 0}, "", batches), {1.0, 0.0, 0.0, 0.0});
  // Sums that are 1 only to the digits written.
  check_near(probs({0.333333333333, 0.333333333333, 0.333333333334, 0}, "", batches),
             {1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0});
}

TEST_CASE("bad sys_probs and auto_prob name the key, the value and the systems", "[train][sampler][probs]") {
  const std::vector<std::int64_t> batches = {10, 30, 20};
  CHECK(
      error_of({0.5, 0.5}, "", batches) ==
      "'training.training_data.sys_probs' in in.json is [0.5,0.5]: must have one entry per training system, "
      "and its paths hold 3 systems");
  CHECK(error_of({0.5, 0.5, 0.5}, "", batches) ==
        "'training.training_data.sys_probs' in in.json is [0.5,0.5,0.5]: its probabilities sum to 1.5, more "
        "than 1");
  CHECK(error_of({0.5, 0.2, 0.2}, "", batches) ==
        "'training.training_data.sys_probs' in in.json is [0.5,0.2,0.2]: its probabilities sum to 0.9, not 1 "
        "(a negative entry takes what is left)");
  CHECK(error_of({}, "prob_sys_size;0:4:1", batches) ==
        "'training.training_data.auto_prob' in in.json is \"prob_sys_size;0:4:1\": names systems up to 3, "
        "but its paths hold 3 systems (0 to 2)");
  CHECK(error_of({}, "prob_sys_size;0:2:1;1:3:1", batches) ==
        "'training.training_data.auto_prob' in in.json is \"prob_sys_size;0:2:1;1:3:1\": puts system 1 in "
        "two blocks");
  const std::string rule =
      ": must be \"prob_uniform\", \"prob_sys_size\" or \"prob_sys_size;a:b:w;...\" (systems a to b - 1 "
      "share the weight w >= 0 by their batches)";
  for (const std::string bad :
       {"uniform", "prob_sys_size;0:2", "prob_sys_size;2:1:1", "prob_sys_size;0:2:-1", "prob_sys_size;0:2:x",
        "prob_sys_size0:2:1", "prob_sys_size;a:2:1", "prob_sys_size;0:2:1;", "prob_sys_size;0:2:nan"}) {
    INFO(bad);
    CHECK(error_of({}, bad, batches) ==
          "'training.training_data.auto_prob' in in.json is \"" + bad + "\"" + rule);
  }
  CHECK(error_of({}, "prob_sys_size;0:2:0", batches) ==
        "'training.training_data.auto_prob' in in.json is \"prob_sys_size;0:2:0\": has no block of systems "
        "with a positive weight");
}

TEST_CASE("with probabilities each epoch keeps its length and gives system s about T p_s batches",
          "[train][sampler][probs]") {
  // Plain counts 3 + 5 + 2 = 10 batches per epoch.
  const std::vector<std::int64_t> nframes = {6, 10, 4};
  const std::vector<int> batch = {2, 2, 2};
  const std::vector<double> p = {0.13, 0.02, 0.85};  // T p = 1.3, 0.2, 8.5
  BatchSampler sampler(nframes, batch, 11, {}, p);
  REQUIRE(sampler.batches_per_epoch() == 10);
  const int epochs = 2000;
  std::vector<double> total(3, 0.0);
  std::vector<std::map<std::int64_t, int>> visits(3);
  for (int e = 0; e < epochs; ++e) {
    std::vector<std::int64_t> count(3, 0);
    for (int i = 0; i < 10; ++i) {
      const auto b = sampler.next();
      CHECK(b.frames.size() == 2);  // full batches: cut from as many shuffles as needed
      ++count[static_cast<std::size_t>(b.system)];
      for (auto f : b.frames) {
        REQUIRE(f >= 0);
        REQUIRE(f < nframes[static_cast<std::size_t>(b.system)]);
        ++visits[static_cast<std::size_t>(b.system)][f];
      }
    }
    for (std::size_t s = 0; s < 3; ++s) {
      // Systematic rounding: within 1 of T p_s in every epoch.
      CHECK(std::abs(static_cast<double>(count[s]) - 10 * p[s]) < 1.0);
      CHECK(count[s] == sampler.batches_of(s));
      total[s] += static_cast<double>(count[s]);
    }
  }
  CHECK(sampler.epoch() == epochs - 1);
  // The mean over epochs is T p_s: a system with T p = 0.2 gets a batch in about 20% of the epochs (the
  // rounding's u is uniform: the standard error of a mean of 2000 draws of a 0/1 variable is 0.009).
  for (std::size_t s = 0; s < 3; ++s) CHECK(std::abs(total[s] / epochs - 10 * p[s]) < 0.05);
  // Every frame of a system is visited about equally often.
  for (std::size_t s = 0; s < 3; ++s) {
    const double mean = 2 * total[s] / static_cast<double>(nframes[s]);
    for (const auto& [frame, n] : visits[s]) CHECK(std::abs(n - mean) < 0.25 * mean + 10);
    CHECK(static_cast<std::int64_t>(visits[s].size()) == nframes[s]);
  }
}

TEST_CASE("a weighted order replays after seek and depends on the seed", "[train][sampler][probs]") {
  const std::vector<double> p = {0.7, 0.0, 0.3};
  BatchSampler a({5, 8, 3}, {1, 2, 1}, 4, {}, p);
  std::vector<deepkf::BatchRef> run;
  for (int i = 0; i < 40; ++i) run.push_back(a.next());
  for (const auto& b : run) CHECK(b.system != 1);  // probability 0: never drawn
  BatchSampler resumed({5, 8, 3}, {1, 2, 1}, 4, {}, p);
  resumed.seek(2, 3);
  const auto per_epoch = resumed.batches_per_epoch();
  for (std::int64_t i = 2 * per_epoch + 3; i < 40; ++i) {
    const auto r = resumed.next();
    CHECK(r.system == run[static_cast<std::size_t>(i)].system);
    CHECK(r.frames == run[static_cast<std::size_t>(i)].frames);
  }
  BatchSampler other({5, 8, 3}, {1, 2, 1}, 5, {}, p);
  bool differs = false;
  for (int i = 0; i < 40; ++i) differs |= other.next().frames != run[static_cast<std::size_t>(i)].frames;
  CHECK(differs);
  CHECK_THROWS_WITH(BatchSampler({5, 8}, {1, 1}, 1, {}, {1.0}),
                    "probabilities given for 1 systems, but there are 2");
  CHECK_THROWS_WITH(BatchSampler({5, 8}, {1, 1}, 1, {}, {0.0, 0.0}), "system probabilities sum to 0");
}
