// The loop input: defaults, paths relative to loop.json, and one clear error per mistake.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/core/Error.hpp"
#include "src/learn/LearnConfig.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A folder with train.json, si.inp, start.h5 (empty files: the config only checks that they exist) and
// loop.json = `doc`.
std::string write_loop(const json& doc) {
  static int n = 0;
  const auto dir = test::make_temp_dir("learn-config-" + std::to_string(n++));
  for (const char* f : {"train.json", "si.inp", "start.h5"}) std::ofstream(dir + "/" + f) << "";
  std::ofstream(dir + "/loop.json") << doc.dump(2);
  return dir + "/loop.json";
}

json minimal() {
  return json::parse(R"({
    "train": {"input": "train.json", "init_steps": 100, "steps": 50},
    "explore": {"structures": ["start.h5#/Si8"], "temperatures": [300, 600], "steps": 200},
    "select": {"trust_lo": 0.05, "trust_hi": 0.3},
    "label": {"template": "si.inp"}
  })");
}

std::string error_of(const json& doc) {
  const std::string path = write_loop(doc);
  try {
    LearnConfig::from_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a minimal loop input gets its defaults and absolute paths", "[learn][config]") {
  const std::string path = write_loop(minimal());
  const LearnConfig c = LearnConfig::from_file(path);
  const std::string dir = fs::path(path).parent_path().string();
  CHECK(c.iterations == 1);
  CHECK(c.train.input == dir + "/train.json");
  CHECK(c.train.models == 4);
  CHECK(c.train.new_frame_repeat == 4);
  CHECK(c.explore.structures.size() == 1);
  CHECK(c.explore.structures[0].path == dir + "/start.h5#/Si8");
  CHECK(c.explore.structures[0].frames == std::vector<std::int64_t>{0});
  CHECK(c.explore.ensemble == "nvt");
  CHECK(c.explore.steps == std::vector<std::int64_t>{200});
  CHECK(c.explore.temperatures == std::vector<double>{300, 600});
  CHECK(c.select.method == "model_deviation");
  CHECK(c.select.max_frames == 10);
  CHECK(c.label.template_path == dir + "/si.inp");
  CHECK(c.label.cp2k == "cp2k.psmp");
  CHECK(c.label.jobs == 1);
}

TEST_CASE("every section's keys and values are read", "[learn][config]") {
  json doc = minimal();
  doc["iterations"] = 3;
  doc["stop_candidate_fraction"] = 0.05;
  doc["seed"] = 7;
  doc["test_data"] = "start.h5";
  doc["train"].update({{"models", 2}, {"new_frame_repeat", 3}, {"ranks", 2}, {"jobs", 2}});
  doc["explore"].update(
      {{"ensemble", "npt"},
       {"pressures", {1.0, 1000.0}},
       {"barostat", "tri"},
       {"steps", {100, 200, 400}},
       {"dump_freq", 5},
       {"masses", {{"Si", 28.1}}},
       {"structures", {{{"path", "start.h5"}, {"frames", {0, 2}}, {"replicate", {2, 1, 1}}}}}});
  doc["select"].update({{"relative", true}, {"max_frames", 4}, {"min_distance", 0.1}});
  doc["label"].update({{"kinds", {{"Si", {"DZVP-MOLOPT-SR-GTH", "GTH-PBE-q4"}}}},
                       {"kpoint_spacing", 0.3},
                       {"timeout", 900},
                       {"jobs", 2}});
  const LearnConfig c = LearnConfig::from_file(write_loop(doc));
  CHECK(c.iterations == 3);
  CHECK(c.stop_candidate_fraction == 0.05);
  CHECK(c.seed == 7);
  CHECK(c.test_data.size() == 1);
  CHECK(c.train.models == 2);
  CHECK(c.train.reset_factor == 3.0);  // the default
  CHECK(c.explore.pressures == std::vector<double>{1.0, 1000.0});
  CHECK(c.explore.barostat == "tri");
  CHECK(c.explore.steps.size() == 3);
  CHECK(c.explore.masses.at("Si") == 28.1);
  CHECK(c.explore.structures[0].frames == std::vector<std::int64_t>{0, 2});
  CHECK(c.explore.structures[0].replicate == std::array<int, 3>{2, 1, 1});
  CHECK(c.select.relative);
  CHECK(c.select.min_distance == 0.1);
  CHECK(c.label.kinds.at("Si")[1] == "GTH-PBE-q4");
  CHECK(c.label.kpoint_spacing == 0.3);
  CHECK(c.label.timeout_s == 900);

  // One model's Kalman sigma: no ensemble needed; force_atoms a count or "all".
  doc = minimal();
  doc["train"]["models"] = 1;
  doc["select"].update({{"method", "kalman_sigma"}, {"force_atoms", 12}});
  const LearnConfig k = LearnConfig::from_file(write_loop(doc));
  CHECK(k.select.method == "kalman_sigma");
  CHECK(k.select.force_atoms == 12);
  doc["select"]["force_atoms"] = "all";
  CHECK(LearnConfig::from_file(write_loop(doc)).select.force_atoms == 0);
  doc["select"].erase("force_atoms");
  CHECK(LearnConfig::from_file(write_loop(doc)).select.force_atoms == 32);
}

TEST_CASE("mistakes in the loop input are one error naming the file, key and value", "[learn][config]") {
  json doc = minimal();
  doc["explore"]["temperature"] = 300;
  CHECK_THAT(error_of(doc), Catch::Contains("unknown key 'temperature' in explore of") &&
                                Catch::Contains("did you mean 'temperatures'?"));
  doc = minimal();
  doc["select"]["trust_hi"] = 0.01;
  CHECK_THAT(error_of(doc),
             Catch::Contains("'select.trust_hi' in") && Catch::Contains("is 0.01: must be above "
                                                                        "trust_lo (0.05)"));
  doc = minimal();
  doc["label"]["template"] = "missing.inp";
  CHECK_THAT(error_of(doc),
             Catch::Contains("'label.template' in") && Catch::Contains("missing.inp does not exist"));
  doc = minimal();
  doc["train"]["models"] = 1;
  CHECK_THAT(error_of(doc), Catch::Contains("'train.models' in") &&
                                Catch::Contains("must be at least 2 with select.method \"model_deviation\""));
  doc = minimal();
  doc["select"]["method"] = "committee";
  CHECK_THAT(error_of(doc), Catch::Contains("'select.method' in") && Catch::Contains("is \"committee\"") &&
                                Catch::Contains("\"kalman_sigma\""));
  doc = minimal();
  doc["train"]["reset_factor"] = -1;
  CHECK_THAT(error_of(doc),
             Catch::Contains("'train.reset_factor' in") && Catch::Contains("must be a number >= 0"));
  doc = minimal();
  doc["select"]["force_atoms"] = 8;
  CHECK_THAT(error_of(doc), Catch::Contains("'select.force_atoms' in") &&
                                Catch::Contains("is used only with select.method \"kalman_sigma\""));
  doc = minimal();
  doc["select"]["method"] = "kalman_sigma";
  doc["select"]["force_atoms"] = 0;
  CHECK_THAT(error_of(doc), Catch::Contains("'select.force_atoms' in") &&
                                Catch::Contains("must be a number of atoms (at least 1) or \"all\""));
  doc = minimal();
  doc["explore"]["ensemble"] = "npt";
  CHECK_THAT(error_of(doc), Catch::Contains("'explore.pressures' (bar) is required"));
  doc = minimal();
  doc["explore"]["structures"] = {{{"path", "start.h5"}, {"replicate", {2, 2}}}};
  CHECK_THAT(error_of(doc), Catch::Contains("'explore.structures[0].replicate' in") &&
                                Catch::Contains("must be three positive integers"));
  doc = minimal();
  doc.erase("label");
  CHECK_THAT(error_of(doc), Catch::StartsWith("missing required section 'label' in"));
  doc = minimal();
  doc["train"]["steps"] = 0.5;
  CHECK_THAT(error_of(doc), Catch::Contains("'train.steps' in") && Catch::Contains("must be an integer"));
}
