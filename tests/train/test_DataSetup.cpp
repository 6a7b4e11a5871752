// Where a training input's relative system paths are found: next to the input file first, then in the
// current directory (DeePMD-kit's convention); a path found in neither is one error naming both.
#include <unistd.h>

#include <filesystem>

#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/train/DataSetup.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

deepkf::TrainConfig config_in(const std::string& input_dir, const std::string& system) {
  json doc = json::parse(R"({"model": {"type_map": ["Si"]}, "training": {"numb_steps": 1}})");
  doc["training"]["training_data"] = {{"systems", {system}}};
  return deepkf::TrainConfig::from_json(doc, input_dir + "/input.json", input_dir);
}

}  // namespace

TEST_CASE("relative system paths: the input's folder first, then the current directory", "[train][data]") {
  const std::string root = deepkf::test::make_temp_dir("paths");
  fs::create_directories(root + "/inputs");
  fs::create_directories(root + "/work/data");
  fs::copy_file(std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5", root + "/work/data/si.h5");
  auto comm = deepkf::make_serial_communicator();
  spdlog::logger quiet("test");

  deepkf::test::in_directory(root + "/work", [&] {
    // Not next to the input: found in the current directory.
    const auto data = deepkf::open_training_data(config_in(root + "/inputs", "data/si.h5"), *comm, quiet);
    REQUIRE(data.train.size() == 3);
    CHECK_THAT(data.train[0].info().source, Catch::Matchers::StartsWith(root + "/work/data/si.h5#"));
    // Next to the input as well: that one wins.
    fs::create_directories(root + "/inputs/data");
    fs::copy_file(root + "/work/data/si.h5", root + "/inputs/data/si.h5");
    const auto near = deepkf::open_training_data(config_in(root + "/inputs", "data/si.h5"), *comm, quiet);
    CHECK_THAT(near.train[0].info().source, Catch::Matchers::StartsWith(root + "/inputs/data/si.h5#"));
    // Neither: one message with both places.
    CHECK_THROWS_WITH(deepkf::open_training_data(config_in(root + "/inputs", "data/none.h5"), *comm, quiet),
                      "'training.training_data.systems' in " + root +
                          "/inputs/input.json names \"data/none.h5\", which is neither " + root +
                          "/inputs/data/none.h5 (next to the input file) nor " + root +
                          "/work/data/none.h5 (in the current directory)");
  });
}

// Found by the reader fuzz driver (tests/fuzz): an empty path was an internal error, and a missing
// absolute path or an element the model's type map lacks did not name the input file.
TEST_CASE("system paths that are empty or absent, and elements outside the type map, name the input",
          "[train][data]") {
  const std::string root = deepkf::test::make_temp_dir("paths-bad");
  auto comm = deepkf::make_serial_communicator();
  spdlog::logger quiet("test");
  CHECK_THROWS_WITH(deepkf::open_training_data(config_in(root, ""), *comm, quiet),
                    "'training.training_data.systems' in " + root + "/input.json holds an empty path");
  CHECK_THROWS_WITH(deepkf::open_training_data(config_in(root, root + "/absent.h5"), *comm, quiet),
                    "'training.training_data.systems' in " + root + "/input.json names \"" + root +
                        "/absent.h5\", which does not exist");
  json doc = json::parse(R"({"model": {"type_map": ["O", "H"]}, "training": {"numb_steps": 1}})");
  doc["training"]["training_data"] = {{"systems", {std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"}}};
  const auto cfg = deepkf::TrainConfig::from_json(doc, root + "/input.json", root);
  CHECK_THROWS_WITH(
      deepkf::open_training_data(cfg, *comm, quiet),
      Catch::Matchers::StartsWith("element 'Si' of ") &&
          Catch::Matchers::EndsWith("is not in the type map (O, H), given by model.type_map of " + root +
                                    "/input.json"));
}

TEST_CASE("a system's batch size follows the path it was found under, through a validation split",
          "[train][data]") {
  const std::string si = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";
  json doc = json::parse(R"({"model": {"type_map": ["Si"]}, "training": {"numb_steps": 1,
                            "validation_fraction": 0.2}})");
  doc["training"]["training_data"] = {{"systems", {si + "#/Si16", si + "#/Si8"}}, {"batch_size", {2, 3}}};
  auto comm = deepkf::make_serial_communicator();
  spdlog::logger quiet("test");
  const auto listed =
      deepkf::open_training_data(deepkf::TrainConfig::from_json(doc, "in.json", "/"), *comm, quiet);
  REQUIRE(listed.train.size() == 2);
  CHECK(listed.train[0].info().natoms == 16);
  CHECK(listed.batch_size == std::vector<int>{2, 3});
  CHECK(listed.valid_batch_size == std::vector<int>{1, 1});
  // "auto:20": the smallest batch with at least 20 atoms, per system.
  doc["training"]["training_data"]["batch_size"] = "auto:20";
  const auto automatic =
      deepkf::open_training_data(deepkf::TrainConfig::from_json(doc, "in.json", "/"), *comm, quiet);
  CHECK(automatic.batch_size == std::vector<int>{2, 3});  // 32 and 24 atoms
}
