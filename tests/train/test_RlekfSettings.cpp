// RLEKF's settings as an input gives them (RlekfSettings): energy_replay "auto", kf_update and its "auto"
// decision by the model's size, the measurement noise, shares, the share rule and the trust radius, each
// read, checked and written back.
#include <nlohmann/json.hpp>
#include <string>

#include "optim/OptimizerInput.hpp"
#include "optim/RlekfSettings.hpp"
#include "src/core/Error.hpp"
#include "tests/support/Catch.hpp"

TEST_CASE("energy_replay \"auto\" fills an energy measurement to 128 atoms with at most 4 frames",
          "[train][config]") {
  using deepkf::auto_energy_replay;
  // (B + R) N >= 128 with R as small as that allows, 0 <= R <= 4 (B frames of N atoms per batch).
  CHECK(auto_energy_replay(192, 1) == 0);  // water: the batch alone spans 192 atoms
  CHECK(auto_energy_replay(128, 1) == 0);
  CHECK(auto_energy_replay(96, 1) == 1);  // 2 x 96 >= 128
  CHECK(auto_energy_replay(64, 1) == 1);  // exactly 128
  CHECK(auto_energy_replay(48, 1) == 2);  // 3 x 48 = 144
  CHECK(auto_energy_replay(48, 2) == 1);  // the batch's own frames count
  CHECK(auto_energy_replay(32, 4) == 0);
  CHECK(auto_energy_replay(16, 1) == 4);  // 8 would be needed: at most 4
  CHECK(auto_energy_replay(8.5, 1) == 4);
  CHECK(auto_energy_replay(0, 1) == 4);  // no frames: the most
}

namespace {

// The RLEKF settings of an input whose optimizer section is `optimizer`.
deepkf::RlekfSettings read_rlekf(const nlohmann::json& optimizer) {
  const nlohmann::json doc = {{"optimizer", optimizer}};
  return deepkf::RlekfSettings::read(deepkf::OptimizerInput(doc, "in.json"));
}

}  // namespace

TEST_CASE("kf_update, force_noise and virial_noise are read and checked, and kalman_lambda follows the noise",
          "[train][config]") {
  // The defaults for a model under kJointWeights: DeePMD-kit's filter, no noise of its own, its forgetting
  // factor.
  const auto defaults = read_rlekf({{"type", "RLEKF"}}).decided(deepkf::kJointWeights - 1, 192.0);
  CHECK(defaults.update == "sequential");
  CHECK(defaults.force_noise == 1.0);  // "none"
  CHECK(defaults.virial_noise == 1.0);
  CHECK(defaults.lambda0 == deepkf::kLambdaWithoutNoise);
  CHECK(defaults.to_json()["force_noise"] == "none");
  CHECK(defaults.to_json()["kf_update"] == "sequential");
  // The joint update with the automatic noise: the slow forgetting that goes with it.
  const auto joint = read_rlekf({{"type", "LKF"}, {"kf_update", "joint"}, {"force_noise", "auto"}});
  CHECK(joint.update == "joint");
  CHECK(joint.force_noise == 0.0);
  CHECK(joint.lambda0 == deepkf::kLambdaWithNoise);
  CHECK(joint.to_json()["force_noise"] == "auto");
  CHECK(read_rlekf({{"type", "RLEKF"}, {"force_noise", 3e-4}}).to_json()["force_noise"] == 3e-4);
  // An explicit kalman_lambda is used as given, whatever the noise.
  CHECK(read_rlekf({{"type", "RLEKF"}, {"kalman_lambda", 0.97}}).lambda0 == 0.97);
  CHECK(read_rlekf({{"type", "RLEKF"}, {"force_noise", 2e-3}, {"virial_noise", 0.5}}).virial_noise == 0.5);
  CHECK_THROWS_WITH(read_rlekf({{"type", "RLEKF"}, {"kf_update", "vector"}}),
                    Catch::Contains("kf_update") && Catch::Contains("vector") && Catch::Contains("joint"));
  CHECK_THROWS_WITH(read_rlekf({{"type", "RLEKF"}, {"force_noise", -1}}),
                    Catch::Contains("force_noise") && Catch::Contains("positive"));
  CHECK_THROWS_AS(read_rlekf({{"type", "RLEKF"}, {"virial_noise", "some"}}), deepkf::ConfigError);
}

TEST_CASE(
    "kf_update auto: the joint update with the large-model settings from kJointWeights on, only "
    "where the input leaves them out",
    "[train][config]") {
  const auto asked = read_rlekf({{"type", "RLEKF"}});
  CHECK(asked.update == "auto");
  // Read back from the intermediate form, the left-out keys stay left out.
  const auto written = asked.to_json();
  CHECK(written.at("kf_update") == "auto");
  for (const char* key :
       {"nselect", "groupsize", "force_noise", "trust_radius", "kalman_lambda", "energy_last", "p0_shape"}) {
    INFO(key);
    CHECK_FALSE(written.contains(key));
  }
  const auto again = read_rlekf(written);
  CHECK(again.unset == asked.unset);

  // A small model: every default as before the choice existed (DeePMD-kit's filter).
  const auto small = again.decided(deepkf::kJointWeights - 1, 192.0);
  CHECK(small.update == "sequential");
  CHECK(small.nselect == 24);
  CHECK(small.groupsize == 6);
  CHECK(small.force_noise == 1.0);
  CHECK(small.trust_radius == 0.0);
  CHECK(small.p0_shape == "identity");
  CHECK(small.lambda0 == deepkf::kLambdaWithoutNoise);
  CHECK(small.energy_last);
  CHECK(small.blocksize == 0);  // the memory plan's
  CHECK(small.p_precision == "auto");
  CHECK(small.to_json().at("nselect") == 24);  // decided: every key written

  // A large one: the settings measured on DeePMD-kit's water model (docs/rlekf.md).
  const auto large = again.decided(deepkf::kJointWeights, 191.3);
  CHECK(large.update == "joint");
  CHECK(large.force_noise == 0.0);  // "auto"
  CHECK(large.trust_radius == deepkf::kJointTrustRadius);
  CHECK(large.p0_shape == "identity");  // shaped from kShapeWeights on
  const auto larger = again.decided(deepkf::kShapeWeights, 191.3);
  CHECK(larger.p0_shape == "layer");
  CHECK(larger.to_json().at("p0_shape") == "layer");
  CHECK(larger.trust_radius == deepkf::kJointTrustRadius);
  CHECK(again.decided(deepkf::kShapeWeights - 1, 191.3).p0_shape == "identity");
  CHECK(large.nselect == 192);  // every atom of a mean frame, in one group
  CHECK(large.groupsize == 192);
  CHECK(large.blocksize == 0);  // the memory plan's, blocks of at most kJointBlocksize
  CHECK(large.max_blocksize == deepkf::kJointBlocksize);
  CHECK(large.p_precision == "float32");
  CHECK(large.lambda0 == deepkf::kLambdaWithNoise);
  CHECK_FALSE(large.energy_last);
  // Small frames: at least the default 24 draws.
  CHECK(again.decided(deepkf::kJointWeights, 8.0).nselect == 24);

  // What the input gives is kept.
  const auto given = read_rlekf({{"type", "RLEKF"},
                                 {"nselect", 48},
                                 {"force_noise", "none"},
                                 {"kf_blocksize", 5120},
                                 {"energy_last", true},
                                 {"kalman_lambda", 0.99},
                                 {"p0_shape", "identity"}})
                         .decided(deepkf::kShapeWeights, 192.0);
  CHECK(given.update == "joint");
  CHECK(given.nselect == 48);
  CHECK(given.groupsize == 48);  // one group of the atoms asked for
  CHECK(given.force_noise == 1.0);
  CHECK(given.blocksize == 5120);
  CHECK(given.max_blocksize == 0);
  CHECK(given.energy_last);
  CHECK(given.lambda0 == 0.99);
  CHECK(given.trust_radius == deepkf::kJointTrustRadius);
  CHECK(given.p0_shape == "identity");
  // An explicit update is not replaced, whatever the size.
  CHECK(read_rlekf({{"type", "RLEKF"}, {"kf_update", "sequential"}})
            .decided(10 * deepkf::kJointWeights, 192.0)
            .update == "sequential");
  // A restored run goes on with the checkpoint's update and blocks.
  const auto restored = again.decided(deepkf::kJointWeights, 192.0, "sequential");
  CHECK(restored.update == "sequential");
  CHECK(restored.nselect == 24);
  const auto restored_joint = again.decided(deepkf::kJointWeights, 192.0, "joint");
  CHECK(restored_joint.update == "joint");
  CHECK(restored_joint.blocksize == 0);
}

TEST_CASE("energy_share, force_share and share_decay are read, checked and written back", "[train][config]") {
  const auto defaults = read_rlekf({{"type", "RLEKF"}});
  CHECK(defaults.energy_share == 0.0);
  CHECK(defaults.share_decay == 0.0);
  CHECK(defaults.to_json()["share_decay"] == "none");
  const auto decayed =
      read_rlekf({{"type", "RLEKF"}, {"energy_share", 0.3}, {"force_share", 0.1}, {"share_decay", 150}});
  CHECK(decayed.energy_share == 0.3);
  CHECK(decayed.force_share == 0.1);
  CHECK(decayed.share_decay == 150.0);
  // The resolved input reads back to the same settings.
  const auto again = read_rlekf(decayed.to_json());
  CHECK(again.share_decay == 150.0);
  CHECK(again.force_share == 0.1);
  CHECK_THROWS_WITH(
      read_rlekf({{"type", "RLEKF"}, {"share_decay", 0}}),
      Catch::Contains("'optimizer.share_decay'") && Catch::Contains("positive number of steps"));
  CHECK_THROWS_WITH(read_rlekf({{"type", "RLEKF"}, {"force_share", 1.0}}),
                    Catch::Contains("force_share") && Catch::Contains("(0, 1)"));
  CHECK_THROWS_AS(read_rlekf({{"type", "RLEKF"}, {"share_decay", "fast"}}), deepkf::ConfigError);
}

TEST_CASE("share_rule and share_growth are read, checked and written back", "[train][config]") {
  const auto defaults = read_rlekf({{"type", "RLEKF"}});
  CHECK(defaults.share_rule == "exact");
  CHECK_FALSE(defaults.share_cap());
  CHECK(defaults.to_json()["share_growth"] == "none");
  const auto capped =
      read_rlekf({{"type", "RLEKF"}, {"force_share", 0.1}, {"share_rule", "cap"}, {"share_growth", 100}});
  CHECK(capped.share_cap());
  CHECK(capped.share_growth == 100.0);
  const auto again = read_rlekf(capped.to_json());
  CHECK(again.share_rule == "cap");
  CHECK(again.share_growth == 100.0);
  // s (1 + t / T): 0.1 at step 0, 0.5 at step 400, and a cap that reaches 1 (step 900) binds no more.
  CHECK(capped.share_at(0.1, 0) == 0.1);
  CHECK(capped.share_at(0.1, 400) == Approx(0.5));
  CHECK(capped.share_at(0.1, 899) == Approx(0.999));
  CHECK(capped.share_at(0.1, 900) == 0.0);
  CHECK(capped.share_at(0.0, 50) == 0.0);
  // Growth and decay together: s (1 + t / T_g) / (1 + t / T_d).
  const auto both =
      read_rlekf({{"type", "RLEKF"}, {"share_rule", "cap"}, {"share_growth", 100}, {"share_decay", 50}});
  CHECK(both.share_at(0.2, 100) == Approx(0.2 * 2.0 / 3.0));
  CHECK_THROWS_WITH(read_rlekf({{"type", "RLEKF"}, {"share_growth", 100}}),
                    Catch::Contains("'optimizer.share_growth'") && Catch::Contains("share_rule"));
  CHECK_THROWS_WITH(read_rlekf({{"type", "RLEKF"}, {"share_rule", "most"}}),
                    Catch::Contains("'optimizer.share_rule'") && Catch::Contains("\"cap\""));
  CHECK_THROWS_AS(read_rlekf({{"type", "RLEKF"}, {"share_rule", "cap"}, {"share_growth", -1}}),
                  deepkf::ConfigError);
}

TEST_CASE("trust_radius is read, checked and written back", "[train][config]") {
  // For a model under kJointWeights (the joint update chosen for a larger one takes 0.5: above).
  const auto defaults = read_rlekf({{"type", "RLEKF"}}).decided(deepkf::kJointWeights - 1, 192.0);
  CHECK(defaults.trust_radius == 0.0);
  CHECK(defaults.to_json()["trust_radius"] == "none");
  const auto bounded = read_rlekf({{"type", "RLEKF"}, {"trust_radius", 0.3}});
  CHECK(bounded.trust_radius == 0.3);
  CHECK(read_rlekf(bounded.to_json()).trust_radius == 0.3);
  CHECK(read_rlekf({{"type", "RLEKF"}, {"trust_radius", "none"}}).trust_radius == 0.0);
  for (const auto& bad :
       {nlohmann::json(0), nlohmann::json(-0.5), nlohmann::json("auto"), nlohmann::json(true)}) {
    INFO(bad.dump());
    CHECK_THROWS_WITH(read_rlekf({{"type", "RLEKF"}, {"trust_radius", bad}}),
                      Catch::Contains("'optimizer.trust_radius'") && Catch::Contains("positive number"));
  }
}
