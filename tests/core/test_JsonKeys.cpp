#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"
#include "tests/support/Catch.hpp"

using Catch::Matchers::Contains;

TEST_CASE("edit distance", "[core][json]") {
  CHECK(deepkf::edit_distance("", "") == 0);
  CHECK(deepkf::edit_distance("rcut", "rcut") == 0);
  CHECK(deepkf::edit_distance("rcutt", "rcut") == 1);
  CHECK(deepkf::edit_distance("kitten", "sitting") == 3);
  CHECK(deepkf::edit_distance("", "abc") == 3);
}

TEST_CASE("unknown keys name the key, the section, the file and the nearest known key", "[core][json]") {
  const auto section = nlohmann::json::parse(R"({"rcut": 6.0, "rcut_smht": 0.5, "_comment": "ok"})");
  const std::vector<std::string> known = {"rcut", "rcut_smth", "sel", "neuron"};
  REQUIRE_THROWS_MATCHES(
      deepkf::check_keys(section, "model.descriptor", known, "input.json"), deepkf::ConfigError,
      Catch::Matchers::Message("unknown key 'rcut_smht' in model.descriptor of input.json; "
                               "did you mean 'rcut_smth'?"));
  const auto far = nlohmann::json::parse(R"({"completely_different": 1})");
  try {
    deepkf::check_keys(far, "model", known, "in.json");
    FAIL("no error for an unknown key");
  } catch (const deepkf::ConfigError& e) {
    CHECK_THAT(e.what(), Contains("unknown key 'completely_different' in model of in.json"));
    CHECK_THAT(e.what(), !Contains("did you mean"));
  }
  CHECK_NOTHROW(deepkf::check_keys(nlohmann::json::parse(R"({"sel": [1], "_x": 0})"), "m", known, "f"));
}

TEST_CASE("typed access reports missing keys and wrong types", "[core][json]") {
  const auto section = nlohmann::json::parse(R"({"rcut": "six", "seed": 3})");
  CHECK(deepkf::get_or<int>(section, "seed", 1, "training", "in.json") == 3);
  CHECK(deepkf::get_or<int>(section, "absent", 7, "training", "in.json") == 7);
  REQUIRE_THROWS_MATCHES(
      deepkf::get_required<double>(section, "rcut", "model.descriptor", "in.json"), deepkf::ConfigError,
      Catch::Matchers::Message("'model.descriptor.rcut' in in.json has the wrong type: \"six\" "
                               "(string)"));
  REQUIRE_THROWS_MATCHES(deepkf::get_required<double>(section, "sel", "model.descriptor", "in.json"),
                         deepkf::ConfigError,
                         Catch::Matchers::Message("missing required key 'model.descriptor.sel' in in.json"));
}
