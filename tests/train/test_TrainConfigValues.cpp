// The training input's values (TrainConfig): numbers range-checked before conversion, the model section and
// its integers, training_data.repeat, sys_probs and auto_prob, batch_size's forms. RLEKF's own settings:
// test_RlekfSettings.cpp.
#include <string>
#include <tuple>
#include <vector>

#include "src/core/Error.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/train/TrainConfig.hpp"
#include "tests/support/Catch.hpp"
#include "tests/train/TrainerTestSupport.hpp"

using deepkf::ConfigError;
using deepkf::TrainConfig;
using deepkf::test::error_of;
using deepkf::test::minimal;
using json = nlohmann::json;

TEST_CASE("numbers are range-checked before conversion and integers must be integers", "[train][config]") {
  // Formerly: 1e30 wrapped to -9223372036854775808 in the message, 2^63 likewise, 0.5 was read as 0.
  json doc = minimal();
  doc["training"]["numb_steps"] = 1e30;
  CHECK(error_of(doc) ==
        "'training.numb_steps' in in.json is 1e+30: must be an integer from -9223372036854775808 to "
        "9223372036854775807");
  doc["training"]["numb_steps"] = 9223372036854775808ULL;
  CHECK(error_of(doc) ==
        "'training.numb_steps' in in.json is 9223372036854775808: must be an integer from "
        "-9223372036854775808 to 9223372036854775807");
  doc["training"]["numb_steps"] = 10.5;
  CHECK(error_of(doc) == "'training.numb_steps' in in.json is 10.5: must be an integer");
  doc["training"]["numb_steps"] = 1e5;  // a whole number written as a float is that integer
  CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").numb_steps == 100000);
  doc["training"]["numb_steps"] = "10";
  CHECK(error_of(doc) == "'training.numb_steps' in in.json has the wrong type: \"10\" (string)");

  doc = minimal();
  doc["training"]["disp_freq"] = 3000000000LL;
  CHECK(error_of(doc) ==
        "'training.disp_freq' in in.json is 3000000000: must be an integer from -2147483648 to "
        "2147483647");
  doc = minimal();
  doc["training"]["seed"] = -1;
  CHECK(error_of(doc) ==
        "'training.seed' in in.json is -1: must be an integer from 0 to 18446744073709551615");
  doc = minimal();
  doc["training"]["training_data"]["batch_size"] = 4294967297LL;
  CHECK(error_of(doc) ==
        "'training.training_data.batch_size' in in.json is 4294967297: must be an integer from "
        "-2147483648 to 2147483647");
  doc = minimal();
  doc["training"]["training_data"]["batch_size"] = 2.5;
  CHECK(error_of(doc) == "'training.training_data.batch_size' in in.json is 2.5: must be an integer");
  doc = minimal();
  doc["optimizer"] = {{"type", "RLEKF"}, {"nselect", 0.5}};
  CHECK(error_of(doc) == "'optimizer.nselect' in in.json is 0.5: must be an integer");
}

TEST_CASE("the model section must be an object with distinct type_map elements", "[train][config]") {
  // Formerly: json's type_error escaped as an internal error once the data was opened.
  json doc = minimal();
  doc["model"] = nullptr;
  CHECK(error_of(doc) == "'model' in in.json is null: must be an object (type_map, descriptor, fitting_net)");
  doc["model"] = 3;
  CHECK(error_of(doc) == "'model' in in.json is 3: must be an object (type_map, descriptor, fitting_net)");
  doc["model"] = {{"type_map", 3}};
  CHECK(error_of(doc) ==
        "model key 'model.type_map' in in.json must be a non-empty list of element names, got 3");
  // Formerly accepted: the second Si was a type no data could have.
  doc["model"] = {{"type_map", {"Si", "O", "Si"}}};
  CHECK(error_of(doc) ==
        "model key 'model.type_map' in in.json names 'Si' twice (entries 0 and 2): each element once");
}

TEST_CASE("model integers: axis_neuron, neuron and sel must be whole numbers in range", "[train][config]") {
  const json model = json::parse(R"({
    "type_map": ["Si"],
    "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [24], "neuron": [8, 16],
                   "axis_neuron": 4},
    "fitting_net": {"neuron": [32, 32]}
  })");
  auto error_of_model = [](const json& m) {
    try {
      deepkf::ModelConfig::from_json(m, "in.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of_model(model) == "no error");
  json m = model;
  // Messages of the model section name the input file (found by tests/fuzz), at set-up too (validate).
  m["descriptor"]["sel"] = -1e30;
  CHECK(error_of_model(m) ==
        "in.json: model key 'model.descriptor.sel' must be a list of integers, got -1e+30");
  m = model;
  m["descriptor"]["sel"] = "auto";
  m["descriptor"]["neuron"] = {8, 0};
  auto unresolved = deepkf::ModelConfig::from_json(m, "in.json");
  unresolved.sel = {24};
  CHECK_THROWS_WITH(unresolved.validate(), Catch::Matchers::StartsWith("in.json: model key"));
  m = model;
  // Formerly read as 0 (and then reported as "must lie in [1, 16], got 0").
  m["descriptor"]["axis_neuron"] = 0.5;
  CHECK(error_of_model(m) == "'model.descriptor.axis_neuron' in in.json is 0.5: must be an integer");
  m["descriptor"]["axis_neuron"] = 4.0;
  CHECK(deepkf::ModelConfig::from_json(m, "in.json").axis_neuron == 4);
  m = model;
  m["descriptor"]["sel"] = {1e10};
  CHECK(error_of_model(m) ==
        "'model.descriptor.sel[0]' in in.json is 10000000000.0: must be an integer from "
        "-2147483648 to 2147483647");
  m = model;
  m["fitting_net"]["neuron"] = {32, 4294967328LL};
  CHECK(error_of_model(m) ==
        "'model.fitting_net.neuron[1]' in in.json is 4294967328: must be an integer from "
        "-2147483648 to 2147483647");
}

TEST_CASE("training_data.repeat is one count or one per system path", "[train][config]") {
  json doc = minimal();
  doc["training"]["training_data"]["repeat"] = 3;
  CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").training_data.repeat == std::vector<int>{3, 3});
  doc["training"]["training_data"]["repeat"] = {1, 4};
  const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.training_data.repeat == std::vector<int>{1, 4});
  CHECK(c.to_json()["training"]["training_data"]["repeat"] == json({1, 4}));
  CHECK(TrainConfig::from_json(minimal(), "in.json", "/tmp").training_data.repeat.empty());
  doc["training"]["training_data"]["repeat"] = {1, 4, 2};
  CHECK(error_of(doc) ==
        "'training.training_data.repeat' in in.json is [1,4,2]: must be a positive integer or a "
        "list of one per system path (2)");
  doc["training"]["training_data"]["repeat"] = 0;
  CHECK(error_of(doc) ==
        "'training.training_data.repeat' in in.json is 0: must be a positive integer or a list of "
        "one per system path (2)");
  doc = minimal();
  doc["training"]["validation_data"] = {{"systems", "c"}, {"repeat", 2}};
  CHECK_THAT(error_of(doc), Catch::Contains("unknown key 'repeat' in training.validation_data"));
}

TEST_CASE("sys_probs and auto_prob are read for training data and have no effect on validation data",
          "[train][config][probs]") {
  json doc = minimal();
  doc["training"]["training_data"]["sys_probs"] = {0.25, -1};
  doc["training"]["training_data"]["auto_prob"] = "prob_uniform";
  TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.training_data.sys_probs == std::vector<double>{0.25, -1});
  CHECK(c.training_data.auto_prob == "prob_uniform");
  CHECK(c.to_json()["training"]["training_data"]["auto_prob"] == "prob_uniform");
  CHECK(c.ignored_keys.empty());
  // DeePMD-kit's old spelling, and its null for "not given".
  doc["training"]["training_data"].erase("auto_prob");
  doc["training"]["training_data"]["auto_prob_style"] = "prob_sys_size;0:1:0.2;1:2:0.8";
  doc["training"]["training_data"]["sys_probs"] = nullptr;
  c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.training_data.auto_prob == "prob_sys_size;0:1:0.2;1:2:0.8");
  CHECK(c.training_data.sys_probs.empty());
  // The form is checked with the input; the system indices when the data is open.
  doc["training"]["training_data"]["auto_prob_style"] = "prob_size";
  CHECK_THAT(error_of(doc), Catch::StartsWith("'training.training_data.auto_prob_style' in in.json is "
                                              "\"prob_size\": must be \"prob_uniform\""));
  doc["training"]["training_data"]["auto_prob"] = "prob_uniform";
  CHECK(error_of(doc) ==
        "'training.training_data.auto_prob' and 'training.training_data.auto_prob_style' in in.json are the "
        "same setting under two names: keep one");
  doc = minimal();
  doc["training"]["training_data"]["sys_probs"] = {0.5, "half"};
  CHECK(error_of(doc) ==
        "'training.training_data.sys_probs' in in.json is [0.5,\"half\"]: must be a list of numbers, one per "
        "training system (a negative one: a share of what the others leave)");
  doc = minimal();
  doc["training"]["validation_data"] = {{"systems", "c"}, {"sys_probs", {1.0}}, {"auto_prob", "x"}};
  c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.ignored_keys ==
        std::vector<std::string>{"training.validation_data.auto_prob", "training.validation_data.sys_probs"});
}

TEST_CASE("DeePMD-kit's aliases sys_weights and numb_batch are sys_probs and numb_btch, both names an error",
          "[train][config][probs]") {
  json doc = minimal();
  doc["training"]["training_data"]["sys_weights"] = {0.25, 0.75};
  doc["training"]["validation_data"] = {{"systems", "c"}, {"numb_batch", 3}, {"sys_weights", {1.0}}};
  // Formerly: "unknown key 'sys_weights' in training.training_data of in.json; did you mean 'sys_probs'?".
  const TrainConfig c = TrainConfig::from_json(doc, "in.json", "/tmp");
  CHECK(c.training_data.sys_probs == std::vector<double>{0.25, 0.75});
  CHECK(c.validation_data.numb_btch == 3);
  CHECK(c.ignored_keys == std::vector<std::string>{"training.validation_data.sys_weights"});
  // The resolved input has DeePMD-kit's first names.
  CHECK(c.to_json()["training"]["training_data"]["sys_probs"] == json({0.25, 0.75}));
  CHECK(c.to_json()["training"]["validation_data"]["numb_btch"] == 3);
  // Errors name the key as the file gives it.
  json bad = doc;
  bad["training"]["validation_data"]["numb_batch"] = 0;
  CHECK(error_of(bad) == "'training.validation_data.numb_batch' in in.json is 0: must be at least 1");
  bad = doc;
  bad["training"]["training_data"]["sys_weights"] = {0.5, "half"};
  CHECK_THAT(error_of(bad), Catch::StartsWith("'training.training_data.sys_weights' in in.json is [0.5,"));
  for (const auto& [section, key, alias] :
       {std::tuple<std::string, std::string, std::string>{"training_data", "sys_probs", "sys_weights"},
        {"validation_data", "sys_probs", "sys_weights"},
        {"validation_data", "numb_btch", "numb_batch"}}) {
    json twice = doc;
    twice["training"][section][key] = twice["training"][section][alias];
    CHECK(error_of(twice) == "'training." + section + "." + key + "' and 'training." + section + "." + alias +
                                 "' in in.json are the same setting under two names: keep one");
  }
}

TEST_CASE("batch_size takes DeePMD-kit's forms: a number, auto, auto:N, max:N, one per system path",
          "[train][config]") {
  // (natoms, batch) pairs: "auto:N" is the smallest batch with at least N atoms, "max:N" the largest with
  // at most N (at least one frame).
  const auto parsed = [](const json& b) {
    json doc = minimal();
    doc["training"]["training_data"]["batch_size"] = b;
    return TrainConfig::from_json(doc, "in.json", "/tmp");
  };
  const auto data = [&](const json& b) { return parsed(b).training_data; };
  CHECK(data(3).batch_for(192, 0) == 3);
  CHECK(data("auto").batch_for(192, 0) == 1);
  CHECK(data("auto").batch_for(12, 0) == 3);  // 36 >= 32
  CHECK(data("auto").batch_for(32, 0) == 1);
  CHECK(data("auto:100").batch_for(12, 0) == 9);  // 108 >= 100 > 96
  CHECK(data("auto:100").batch_for(100, 0) == 1);
  CHECK(data("max:100").batch_for(12, 0) == 8);   // 96 <= 100 < 108
  CHECK(data("max:100").batch_for(192, 0) == 1);  // never fewer than one frame
  CHECK(data(json({2, 5})).batch_for(12, 0) == 2);
  CHECK(data(json({2, 5})).batch_for(12, 1) == 5);
  // input.resolved.json keeps the form
  CHECK(parsed("auto").to_json()["training"]["training_data"]["batch_size"] == "auto");
  CHECK(parsed("auto:64").to_json()["training"]["training_data"]["batch_size"] == "auto:64");
  CHECK(parsed("max:8").to_json()["training"]["training_data"]["batch_size"] == "max:8");
  CHECK(parsed(json({2, 5})).to_json()["training"]["training_data"]["batch_size"] == json({2, 5}));
  CHECK(
      TrainConfig::from_json(parsed("auto:64").to_json(), "in.json", "/tmp").training_data.batch_for(12, 0) ==
      6);

  json doc = minimal();
  const std::string rule =
      "must be a positive integer, \"auto\", \"auto:N\", \"max:N\" or a list of one positive integer per "
      "system path (2)";
  for (const json& bad : {json(0), json("auto:"), json("auto:x"), json("max"), json("max:0"), json({1, 2, 3}),
                          json({1, 0}), json("big")}) {
    doc["training"]["training_data"]["batch_size"] = bad;
    CHECK(error_of(doc) == "'training.training_data.batch_size' in in.json is " + bad.dump() + ": " + rule);
  }
  doc["training"]["training_data"]["batch_size"] = "mixed:32";
  CHECK(
      error_of(doc) ==
      "'training.training_data.batch_size' in in.json is \"mixed:32\": DeePMD-kit's \"mixed:N\" puts frames "
      "of different systems (other atom counts and types, padded with virtual atoms) into one batch, which "
      "deepkf's batches (the frames of one system) cannot hold: use N for N frames of one system per batch, "
      "\"auto:N\" or \"max:N\"; type_mix data (real_atom_types.npy) is read as the ordinary systems of its "
      "frames");
  doc["training"]["training_data"]["batch_size"] = "filter:32";
  CHECK_THAT(error_of(doc), Catch::Contains("DeePMD-kit's \"filter:N\" is not supported by deepkf"));
}

TEST_CASE("save_in_background is \"auto\", \"journal\", true or false", "[train][config]") {
  for (const json value : {json("auto"), json("journal"), json(true), json(false)}) {
    json doc = minimal();
    doc["training"]["save_in_background"] = value;
    CHECK(TrainConfig::from_json(doc, "in.json", "/tmp").save_in_background == value);
  }
  json doc = minimal();
  doc["training"]["save_in_background"] = "sometimes";
  CHECK(error_of(doc) ==
        "'training.save_in_background' in in.json is \"sometimes\": must be \"auto\", "
        "\"journal\", true or false");
}
