// The training input (TrainConfig): DeePMD-kit's water reference input, defaults and the optimizer section,
// the run's length, keys without effect, misspelt and bad keys, and unreadable or invalid files.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "src/train/TrainConfig.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

using deepkf::TrainConfig;
using deepkf::test::error_of;
using deepkf::test::minimal;
using json = nlohmann::json;

TEST_CASE("the DeePMD-kit water reference input is accepted", "[train][config]") {
  const std::string dir = deepkf::test::require_shared_dataset("water");
  const TrainConfig c = TrainConfig::from_file(dir + "/input_se_e2_a.reference.json");
  CHECK(c.numb_steps == 1000000);
  CHECK(c.seed == 10);
  CHECK(c.training_data.systems.size() == 3);
  CHECK(c.training_data.batch_rule == deepkf::DataSection::BatchRule::kAtLeast);
  CHECK(c.training_data.batch_for(192, 0) == 1);
  CHECK(c.validation_data.systems.size() == 1);
  CHECK(c.validation_data.numb_btch == 3);
  // The reference input trains Adam by default in DeePMD-kit; here RLEKF is the default, and the schedule
  // and prefactors of Adam are listed as unused.
  CHECK(c.optimizer == "RLEKF");
  CHECK(c.unused_keys.size() == 10);
  json adam = json::parse(std::ifstream(dir + "/input_se_e2_a.reference.json"), nullptr, true, true);
  adam["optimizer"] = {{"type", "Adam"}};
  const auto a = TrainConfig::from_json(adam, "ref.json", dir).optimizer_settings;
  CHECK(a.at("learning_rate").at("start_lr") == 0.001);
  CHECK(a.at("learning_rate").at("decay_steps") == 5000);
  CHECK(a.at("start_pref_f") == 1000);
  CHECK(c.disp_freq == 100);
  CHECK(c.model.at("descriptor").at("sel") == json::array({46, 92}));
  CHECK(c.base_dir == dir);
}

TEST_CASE("defaults and the optimizer section", "[train][config]") {
  json doc = minimal();
  TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.optimizer == "RLEKF");
  CHECK(c.optimizer_settings.at("kf_blocksize") == "auto");  // the memory plan chooses
  CHECK(c.optimizer_settings.at("p_precision") == "auto");
  CHECK(c.optimizer_settings.at("p0") == "auto");             // chosen from the first batches (AutoP0.hpp)
  CHECK(c.optimizer_settings.at("p_cap") == 1e4);             // the covariance's diagonal stays below 1e4 p0
  CHECK(c.optimizer_settings.at("energy_replay") == "auto");  // chosen from the frames' size
  // Decided by the model's size when the step is made (RlekfSettings::decided): the keys it may set are
  // left out until then.
  CHECK(c.optimizer_settings.at("kf_update") == "auto");
  CHECK_FALSE(c.optimizer_settings.contains("kalman_lambda"));
  CHECK_FALSE(c.optimizer_settings.contains("nselect"));
  CHECK(c.optimizer_settings.at("kalman_nue") == 0.9987);
  CHECK(c.training_data.batch_size == 2);

  doc["optimizer"] = json::parse(
      R"({"type": "LKF", "kf_blocksize": 10240, "kf_start_pref_f": 2, "p0": 0.01, "p_cap": 1e4})");
  c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.optimizer_settings.at("p_cap") == 1e4);
  CHECK(c.optimizer_settings.at("kf_blocksize") == 10240);
  CHECK(c.optimizer_settings.at("kf_start_pref_f") == 2);
  CHECK(c.optimizer_settings.at("p0") == 0.01);

  // DeePMD-kit's PyTorch layout: training.opt_type and loss.kf_*.
  json dp = minimal();
  dp["training"]["opt_type"] = "LKF";
  dp["training"]["kf_blocksize"] = 1024;
  dp["loss"] = json::parse(R"({"type": "ener", "kf_start_pref_e": 1, "kf_limit_pref_e": 2})");
  c = TrainConfig::from_json(dp, "in.json", "/tmp");
  CHECK(c.optimizer == "RLEKF");
  CHECK(c.optimizer_settings.at("kf_blocksize") == 1024);
  CHECK(c.optimizer_settings.at("kf_limit_pref_e") == 2);

  json adam = minimal();
  adam["optimizer"] = json::parse(R"({"type": "Adam", "learning_rate": {"start_lr": 0.01, "stop_lr": 1e-5,
                                     "decay_steps": 100}, "start_pref_f": 100})");
  c = TrainConfig::from_json(adam, "in.json", "/tmp");
  CHECK(c.optimizer == "Adam");
  CHECK(c.optimizer_settings.at("learning_rate").at("start_lr") == 0.01);
  CHECK(c.optimizer_settings.at("start_pref_f") == 100);
  CHECK(c.optimizer_settings.at("adam_beta1") == 0.9);  // DeePMD-kit's defaults
  CHECK(c.optimizer_settings.at("adam_beta2") == 0.999);
  CHECK(c.optimizer_settings.at("weight_decay") == 0.0);
  // DeePMD-kit's newer Adam keys: taken, and checked.
  json betas = adam;
  betas["optimizer"]["adam_beta1"] = 0.8;
  betas["optimizer"]["adam_beta2"] = 0.99;
  betas["optimizer"]["weight_decay"] = 1e-4;
  const auto b = TrainConfig::from_json(betas, "in.json", "/tmp").optimizer_settings;
  CHECK(b.at("adam_beta1") == 0.8);
  CHECK(b.at("adam_beta2") == 0.99);
  CHECK(b.at("weight_decay") == 1e-4);
  betas["optimizer"]["adam_beta2"] = 1.0;
  CHECK_THROWS_WITH(TrainConfig::from_json(betas, "in.json", "/tmp"),
                    Catch::Contains("adam_beta2") && Catch::Contains("must be in [0, 1)"));
  // The resolved configuration reads back to the same settings.
  const TrainConfig again = TrainConfig::from_json(c.to_json(), "resolved.json", "/tmp");
  CHECK(again.optimizer == "Adam");
  CHECK(again.optimizer_settings == c.optimizer_settings);
  CHECK(again.numb_steps == c.numb_steps);
  const TrainConfig rlekf = TrainConfig::from_json(minimal(), "in.json", "/tmp");
  CHECK(TrainConfig::from_json(rlekf.to_json(), "resolved.json", "/tmp").optimizer_settings ==
        rlekf.optimizer_settings);
}

TEST_CASE("DeePMD-kit v3's stop_lr_ratio gives stop_lr = start_lr * stop_lr_ratio, with stop_lr an error",
          "[train][config]") {
  json doc = minimal();
  doc["training"]["opt_type"] = "Adam";
  doc["learning_rate"] = {{"type", "exp"}, {"start_lr", 2e-3}, {"stop_lr_ratio", 1e-3}, {"decay_steps", 100}};
  // Formerly: "unknown key 'stop_lr_ratio' in learning_rate of in.json".
  const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.optimizer_settings.at("learning_rate").at("stop_lr").get<double>() == Approx(2e-6));
  // The resolved input holds stop_lr, and reads back to the same settings.
  CHECK(TrainConfig::from_json(c.to_json(), "resolved.json", "/tmp").optimizer_settings ==
        c.optimizer_settings);
  json both = doc;
  both["learning_rate"]["stop_lr"] = 1e-8;
  CHECK(
      error_of(both) ==
      "'learning_rate.stop_lr' and 'learning_rate.stop_lr_ratio' in in.json both set the final learning rate "
      "(stop_lr = start_lr * stop_lr_ratio): keep one");
  json zero = doc;
  zero["learning_rate"]["stop_lr_ratio"] = 0;
  CHECK_THAT(error_of(zero), Catch::StartsWith("'learning_rate.stop_lr_ratio' in in.json is 0") &&
                                 Catch::EndsWith("must be positive"));
  // With RLEKF it is Adam's key, listed as unused like the rest of the schedule.
  doc["training"].erase("opt_type");
  CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").unused_keys ==
        std::vector<std::string>{"learning_rate.type", "learning_rate.start_lr",
                                 "learning_rate.stop_lr_ratio", "learning_rate.decay_steps"});
}

TEST_CASE("the run's length under DeePMD-kit's names: numb_steps and its aliases, or num_epoch",
          "[train][config]") {
  for (const char* name : {"stop_batch", "num_step", "num_steps", "numb_step"}) {
    INFO(name);
    json doc = minimal();
    doc["training"].erase("numb_steps");
    doc["training"][name] = 7;
    const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
    CHECK(c.numb_steps == 7);
    CHECK(c.numb_epoch == 0.0);
  }
  json doc = minimal();
  doc["training"].erase("numb_steps");
  doc["training"]["num_epoch"] = 2.5;
  TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.numb_epoch == 2.5);
  // ceil(num_epoch x batches per epoch), as DeePMD-kit counts them
  CHECK(c.resolve_numb_steps(38) == "num_epoch 2.5 x 38 batches per epoch: 95 steps");
  CHECK(c.numb_steps == 95);
  CHECK(c.resolve_numb_steps(39) == "num_epoch 2.5 x 39 batches per epoch: 98 steps");
  doc["training"]["num_epoch"] = 0.25;
  c = TrainConfig::from_json(doc, "in.json", "/tmp");
  (void)c.resolve_numb_steps(8);
  CHECK(c.numb_steps == 2);  // exactly 2, not 3 by rounding

  doc = minimal();
  CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").resolve_numb_steps(38).empty());  // numb_steps given
  doc["training"]["num_epoch"] = 1;
  CHECK(error_of(doc) ==
        "training.numb_steps and training.num_epoch in in.json both set the length of the run: keep one");
  doc = minimal();
  doc["training"]["stop_batch"] = 4;
  CHECK(
      error_of(doc) ==
      "'training.numb_steps' and 'training.stop_batch' in in.json are the same setting under two names: keep "
      "one");
  doc = minimal();
  doc["training"].erase("numb_steps");
  CHECK(error_of(doc) == "missing required key 'training.numb_steps' (or 'training.num_epoch') in in.json");
  doc["training"]["numb_epochs"] = 0;
  CHECK(
      error_of(doc) ==
      "'training.numb_epochs' in in.json is 0: must be a positive number of passes over the training frames");
}

TEST_CASE("newer DeePMD-kit keys without effect here are accepted and listed", "[train][config]") {
  json doc = minimal();
  doc["validating"] = json::parse(R"({"full_validation": true})");
  doc["training"]["disp_avg"] = true;
  const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(std::find(c.ignored_keys.begin(), c.ignored_keys.end(), "validating") != c.ignored_keys.end());
  CHECK(std::find(c.ignored_keys.begin(), c.ignored_keys.end(), "training.disp_avg") != c.ignored_keys.end());
}

TEST_CASE("calibration_frames \"auto\" is one frame per 10 steps, at most 64", "[train][config]") {
  const TrainConfig c = TrainConfig::from_json(minimal(), "in.json", "/tmp");
  REQUIRE(c.calibration_frames == TrainConfig::kCalibrationAuto);
  CHECK(c.calibration_frames_for(2) == 0);  // a 2-step trial run is not made 3 times longer
  CHECK(c.calibration_frames_for(9) == 0);
  CHECK(c.calibration_frames_for(10) == 1);
  CHECK(c.calibration_frames_for(45) == 4);
  CHECK(c.calibration_frames_for(640) == 64);
  CHECK(c.calibration_frames_for(1000000) == 64);
  json doc = minimal();
  doc["training"]["calibration_frames"] = 4;
  CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").calibration_frames_for(2) == 4);
}

TEST_CASE("DeePMD-kit's moving average of the weights: enable_ema, ema_decay, ema_ckpt_keep",
          "[train][config]") {
  json doc = minimal();
  CHECK_FALSE(TrainConfig::from_json(doc, "in.json", "/tmp").enable_ema);
  doc["training"]["enable_ema"] = true;
  doc["training"]["ema_decay"] = 0.99;
  doc["training"]["ema_ckpt_keep"] = 3;
  const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.enable_ema);
  CHECK(c.ema_decay == 0.99);
  CHECK(std::find(c.ignored_keys.begin(), c.ignored_keys.end(), "training.ema_ckpt_keep") !=
        c.ignored_keys.end());
  const TrainConfig again = TrainConfig::from_json(c.to_json(), "resolved.json", "/tmp");
  CHECK(again.enable_ema);
  CHECK(again.ema_decay == 0.99);
  doc["training"]["ema_decay"] = 1.0;
  CHECK_THROWS_WITH(TrainConfig::from_json(doc, "in.json", "/tmp"),
                    Catch::Contains("training.ema_decay") && Catch::Contains("less than 1"));
}

TEST_CASE("misspelt and bad keys name the key, the file and a suggestion", "[train][config]") {
  json doc = minimal();
  doc["training"]["disp_freg"] = 5;
  CHECK(error_of(doc) == "unknown key 'disp_freg' in training of in.json; did you mean 'disp_freq'?");

  doc = minimal();
  doc["optimizer"] = json::parse(R"({"type": "LKF", "kf_blocksze": 10})");
  CHECK(error_of(doc) == "unknown key 'kf_blocksze' in optimizer of in.json; did you mean 'kf_blocksize'?");

  doc = minimal();
  doc["optimizer"] = json::parse(R"({"type": "SGD"})");
  CHECK(error_of(doc) ==
        "'optimizer.type' in in.json is \"SGD\": use \"RLEKF\" (DeePMD-kit's \"LKF\") or \"Adam\"");

  // One value per setting, and one optimizer.
  doc = minimal();
  doc["training"]["kf_blocksize"] = 1024;
  doc["optimizer"] = {{"kf_blocksize", 2048}};
  CHECK(error_of(doc) ==
        "'kf_blocksize' is given twice in in.json, as 'optimizer.kf_blocksize' and as "
        "'training.kf_blocksize': keep one");
  doc = minimal();
  doc["training"]["opt_type"] = "LKF";
  doc["optimizer"] = {{"type", "Adam"}};
  CHECK(error_of(doc) ==
        "'optimizer.type' (Adam) and 'training.opt_type' (RLEKF) in in.json name different optimizers: keep "
        "one");
  doc = minimal();
  doc["loss"] = {{"kf_start_pref_f", -1}};
  CHECK(error_of(doc) == "'loss.kf_start_pref_f' in in.json is -1.0: must not be negative");
  doc = minimal();
  doc["optimizer"] = {{"type", "Adam"}, {"learning_rate", {{"type", "cosine"}}}};
  CHECK(error_of(doc) ==
        "'optimizer.learning_rate.type' in in.json is \"cosine\": only \"exp\" (exponential decay) is "
        "supported");
  doc = minimal();
  doc["optimizer"] = {{"type", "RLEKF"}, {"nselect", 4}, {"groupsize", 5}};
  CHECK(error_of(doc) == "'optimizer.groupsize' in in.json is 5: must be between 1 and nselect (4)");

  doc = minimal();
  doc["optimizer"] = {{"type", "RLEKF"}, {"p0", "large"}};
  CHECK(error_of(doc) == "'optimizer.p0' in in.json is \"large\": must be a positive number or \"auto\"");
  doc["optimizer"]["p0"] = 0;
  CHECK(error_of(doc) == "'optimizer.p0' in in.json is 0: must be a positive number or \"auto\"");
  doc["optimizer"] = {{"type", "RLEKF"}, {"p_cap", 0.5}};
  CHECK(error_of(doc) == "'optimizer.p_cap' in in.json is 0.5: must be a number of at least 1 or \"none\"");
  doc["optimizer"] = {{"type", "RLEKF"}, {"energy_replay", -1}};
  CHECK(error_of(doc) ==
        "'optimizer.energy_replay' in in.json is -1: must be a non-negative integer or \"auto\"");
  doc["optimizer"]["energy_replay"] = "some";
  CHECK(error_of(doc) ==
        "'optimizer.energy_replay' in in.json is \"some\": must be a non-negative integer or \"auto\"");
  doc["optimizer"]["energy_replay"] = 2;
  CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").optimizer_settings.at("energy_replay") == 2);

  doc = minimal();
  doc["training"]["training_data"]["batch_size"] = 0;
  CHECK(error_of(doc) ==
        "'training.training_data.batch_size' in in.json is 0: must be a positive integer, \"auto\", "
        "\"auto:N\", "
        "\"max:N\" or a list of one positive integer per system path (2)");

  doc = minimal();
  doc["training"].erase("numb_steps");
  CHECK(error_of(doc) == "missing required key 'training.numb_steps' (or 'training.num_epoch') in in.json");

  doc = minimal();
  doc["optimizer"] = json::parse(R"({"kalman_lambda": 1.5})");
  CHECK(error_of(doc) == "'optimizer.kalman_lambda' in in.json is 1.5: must be in (0, 1]");

  doc = minimal();
  doc["trainning"] = json::object();
  CHECK(error_of(doc) == "unknown key 'trainning' in the top level of in.json; did you mean 'training'?");
}

TEST_CASE("DeePMD-kit keys without effect are accepted and listed", "[train][config]") {
  json doc = minimal();
  doc["training"]["disp_training"] = true;
  doc["training"]["training_data"]["set_prefix"] = "set";
  const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  REQUIRE(c.ignored_keys.size() == 2);
  CHECK(c.ignored_keys[0] == "training.disp_training");
  CHECK(c.ignored_keys[1] == "training.training_data.set_prefix");
  CHECK(c.unused_keys.empty());

  // Keys of the optimizer not chosen are accepted and listed apart.
  doc = minimal();
  doc["loss"] = {{"start_pref_f", 100}, {"kf_start_pref_f", 2}};
  doc["learning_rate"] = {{"start_lr", 0.01}};
  const TrainConfig d = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(d.unused_keys == std::vector<std::string>{"learning_rate.start_lr", "loss.start_pref_f"});
  CHECK(d.optimizer_settings.at("kf_start_pref_f") == 2);
}

TEST_CASE("an unreadable or invalid input file is reported", "[train][config]") {
  CHECK_THROWS_WITH(TrainConfig::from_file("/nonexistent/in.json"),
                    "cannot open input file /nonexistent/in.json");
  const std::string dir = deepkf::test::make_temp_dir("config");
  std::ofstream(dir + "/bad.json") << "{\"model\": {";
  CHECK_THROWS_WITH(TrainConfig::from_file(dir + "/bad.json"),
                    Catch::Matchers::StartsWith("input file " + dir + "/bad.json is not valid JSON"));
  // A number beyond double's range was an internal error (found by tests/fuzz).
  std::ofstream(dir + "/huge.json") << R"({"model": {"type_map": ["O"]}, "training": {"numb_steps": 1e309}})";
  CHECK_THROWS_WITH(TrainConfig::from_file(dir + "/huge.json"),
                    Catch::Matchers::StartsWith("input file " + dir + "/huge.json is not valid JSON") &&
                        Catch::Matchers::Contains("1e309"));
}
