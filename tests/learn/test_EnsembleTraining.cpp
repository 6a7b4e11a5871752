// The training input of an ensemble member: the user's input with the loop's data, weights, steps and seeds.
#include <filesystem>
#include <fstream>

#include "src/core/Error.hpp"
#include "src/learn/EnsembleTraining.hpp"
#include "src/train/TrainConfig.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using json = nlohmann::json;

TEST_CASE("a member's input adds the labelled groups, weighs the newest and shifts the seeds",
          "[learn][train]") {
  const auto dir = test::make_temp_dir("member-input");
  std::filesystem::create_directories(dir + "/data");
  std::ofstream(dir + "/data/a.h5") << "";
  std::ofstream(dir + "/data/valid.h5") << "";
  const json base = json::parse(R"({
    "model": {"type_map": ["Si"], "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [20],
              "seed": 10}, "fitting_net": {"neuron": [8]}},
    "training": {"training_data": {"systems": "data/a.h5", "batch_size": 1},
                 "validation_data": {"systems": ["data/valid.h5"]}, "numb_steps": 5, "seed": 3}
  })");
  TrainingRound round;
  round.label_groups = {"/run/labels.h5#/iter.000", "/run/labels.h5#/iter.002"};
  round.numb_steps = 700;
  const json in = member_input(base, dir + "/train.json", round, 2, 5, 3);
  const json& t = in.at("training");
  CHECK(t.at("training_data").at("systems") ==
        json({dir + "/data/a.h5", "/run/labels.h5#/iter.000", "/run/labels.h5#/iter.002"}));
  CHECK(t.at("training_data").at("repeat") == json({1, 1, 5}));
  CHECK(t.at("validation_data").at("systems") == json({dir + "/data/valid.h5"}));
  CHECK(t.at("numb_steps") == 700);
  CHECK(t.at("seed") == 5);                                 // 3 + member 2
  CHECK(in.at("model").at("descriptor").at("seed") == 12);  // 10 + 2
  CHECK(in.at("model").at("fitting_net").at("seed") == 3);  // default 1 + 2
  CHECK(t.at("num_threads") == 3);
  // It is a valid training input.
  const TrainConfig c = TrainConfig::from_json(in, "member.json", "/");
  CHECK(c.training_data.repeat == std::vector<int>{1, 1, 5});

  // The first round: no groups, the user's own repeat kept; a given num_threads kept.
  json own = base;
  own["training"]["training_data"]["repeat"] = 2;
  own["training"]["num_threads"] = 1;
  const json first = member_input(own, dir + "/train.json", TrainingRound{"", {}, 100, {}, {}}, 0, 5, 3);
  CHECK(first.at("training").at("training_data").at("repeat") == json({2}));
  CHECK(first.at("training").at("num_threads") == 1);
  CHECK(first.at("training").at("seed") == 3);

  // A batch_size list (one per path) takes one frame at a time from each labelled group.
  json listed = base;
  listed["training"]["training_data"]["batch_size"] = json::array({4});
  const json grown = member_input(listed, dir + "/train.json", round, 0, 5, 3);
  CHECK(grown.at("training").at("training_data").at("batch_size") == json({4, 1, 1}));
  CHECK(TrainConfig::from_json(grown, "member.json", "/").training_data.batch_for(8, 2) == 1);
}

TEST_CASE("a member's input names a missing data path", "[learn][train]") {
  const auto dir = test::make_temp_dir("member-input-missing");
  const json base = json::parse(R"({"training": {"training_data": {"systems": ["nowhere.h5"]}}})");
  CHECK_THROWS_WITH(
      member_input(base, dir + "/train.json", TrainingRound{}, 0, 1, 1),
      Catch::Contains("'training.training_data.systems' in " + dir + "/train.json names \"nowhere.h5\""));
}

TEST_CASE("every round keeps the training input's covariance bound: the default, or the user's own",
          "[learn][train]") {
  const auto dir = test::make_temp_dir("member-input-cap");
  std::ofstream(dir + "/a.h5") << "";
  const json base = json::parse(R"({
    "model": {"type_map": ["Si"], "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [20]},
              "fitting_net": {"neuron": [8]}},
    "training": {"training_data": {"systems": "a.h5"}, "numb_steps": 5}
  })");
  TrainingRound first{"", {}, 100, {}, {}};
  TrainingRound later{"", {"/run/labels.h5#/iter.000"}, 200, {"/run/model_0.ckpt"}, {}};
  const auto p_cap = [&](const json& input, const TrainingRound& round) {
    const json in = member_input(input, dir + "/train.json", round, 0, 1, 1);
    return TrainConfig::from_json(in, "member.json", "/").optimizer_settings.at("p_cap");
  };
  // Continuing a filter whose P grew unbounded diverged in the online-learning benchmark; the default bound
  // (1e4 p0, docs/rlekf.md "Bounded covariance") holds in the first round and in continued ones.
  CHECK(p_cap(base, first) == 1e4);
  CHECK(p_cap(base, later) == 1e4);
  json old_style = base;
  old_style["training"]["opt_type"] = "LKF";
  CHECK(p_cap(old_style, later) == 1e4);
  // The user's own value, "none" included, is kept.
  json own = base;
  own["optimizer"] = {{"type", "LKF"}, {"p_cap", "none"}};
  CHECK(p_cap(own, later) == "none");
  own["optimizer"]["p_cap"] = 50;
  CHECK(p_cap(own, later) == 50);
}
