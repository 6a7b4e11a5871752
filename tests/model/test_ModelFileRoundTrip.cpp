// The model file: a saved model loads back bit-identically; missing, truncated, garbage and corrupt files,
// checkpoints and newer format versions give ModelError naming the file, and format 1 still loads.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "src/core/Error.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

TEST_CASE("model files round-trip bit-identically and bad files give ModelError", "[model]") {
  const auto dir = make_temp_dir("model_file");
  const auto path = dir + "/model.pt";
  auto model = small_model(false, true);
  model->set_energy_bias(torch::tensor({-2.0, 0.5}, torch::kFloat64));
  const nlohmann::json provenance = {{"steps", 42}, {"data", {"a/b"}}};
  save_model(path, model, provenance);
  const auto c = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  const auto ref = run(model, c);

  const auto loaded = load_model(path, torch::kCPU);
  CHECK(loaded.provenance == provenance);
  CHECK(loaded.format_version == 2);
  CHECK(loaded.checksum.find("verified") != std::string::npos);
  CHECK(loaded.config.to_json() == model->config().to_json());
  auto m2 = loaded.model;
  const auto out = run(m2, c);
  CHECK(torch::equal(out.energy, ref.energy));
  CHECK(torch::equal(out.force, ref.force));
  CHECK(torch::equal(out.virial, ref.virial));
  CHECK(torch::equal(m2->davg(), model->davg()));
  CHECK(torch::equal(m2->energy_bias(), model->energy_bias()));
  CHECK(read_model_metadata(path)["sel"] == nlohmann::json({20, 20}));
  // The same model written as another format version would write it (metadata and weights, no checksums).
  const auto write_with_version = [&](int version, const std::string& to) {
    auto meta = read_model_metadata(path);
    meta["format_version"] = version;
    torch::serialize::OutputArchive weights;
    model->save(weights);
    torch::serialize::OutputArchive archive;
    archive.write("deepkf_metadata", c10::IValue(meta.dump()));
    archive.write("deepkf_model", weights);
    archive.save_to(to);
  };

  SECTION("missing") { CHECK_THROWS_WITH(load_model(dir + "/none.pt"), Catch::Contains("none.pt")); }
  SECTION("truncated") {
    const auto size = std::filesystem::file_size(path);
    std::filesystem::copy_file(path, dir + "/cut.pt");
    std::filesystem::resize_file(dir + "/cut.pt", size / 2);
    CHECK_THROWS_AS(load_model(dir + "/cut.pt"), ModelError);
    CHECK_THROWS_WITH(load_model(dir + "/cut.pt"), Catch::Contains("cut.pt"));
  }
  SECTION("garbage") {
    std::ofstream(dir + "/junk.pt") << "not a model";
    CHECK_THROWS_WITH(load_model(dir + "/junk.pt"), Catch::Contains("junk.pt"));
  }
  SECTION("flipped bytes in a tensor or in the metadata are named") {
    // The stored bytes of the energy bias (-2, 0.5 in float64) are in the file as they are.
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const double bias[2] = {-2.0, 0.5};
    const auto at = bytes.find(std::string(reinterpret_cast<const char*>(bias), sizeof bias));
    REQUIRE(at != std::string::npos);
    auto flipped = bytes;
    flipped[at + 3] = static_cast<char>(flipped[at + 3] ^ 0x10);
    std::ofstream(dir + "/flipped.pt", std::ios::binary) << flipped;
    CHECK_THROWS_WITH(load_model(dir + "/flipped.pt"), Catch::Contains("flipped.pt") &&
                                                           Catch::Contains("corrupt") &&
                                                           Catch::Contains("tensor 'energy_bias'"));
    // "rcut_smth" appears only in the metadata text: change its value's first digit.
    auto meta_flipped = bytes;
    const auto key = meta_flipped.find("\"rcut_smth\":");
    REQUIRE(key != std::string::npos);
    auto& digit = meta_flipped[key + 12];
    REQUIRE(digit >= '0');
    REQUIRE(digit < '9');
    digit = static_cast<char>(digit + 1);
    std::ofstream(dir + "/meta.pt", std::ios::binary) << meta_flipped;
    CHECK_THROWS_WITH(load_model(dir + "/meta.pt"),
                      Catch::Contains("meta.pt") && Catch::Contains("metadata"));
  }
  SECTION("format 1 (no checksums) still loads") {
    write_with_version(1, dir + "/old.pt");
    const auto old = load_model(dir + "/old.pt");
    CHECK(old.format_version == 1);
    CHECK(old.checksum == "none (format 1)");
    auto old_model = old.model;
    CHECK(torch::equal(run(old_model, c).energy, ref.energy));
  }
  SECTION("a checkpoint given as a model says to export it") {
    std::ofstream(dir + "/run.ckpt", std::ios::binary) << std::string("DEEPKFCK") + std::string(64, '\0');
    CHECK_THROWS_WITH(load_model(dir + "/run.ckpt"), Catch::Contains("run.ckpt") &&
                                                         Catch::Contains("checkpoint") &&
                                                         Catch::Contains("export"));
  }
  SECTION("newer format version") {
    write_with_version(3, dir + "/new.pt");
    CHECK_THROWS_WITH(load_model(dir + "/new.pt"), Catch::Contains("new.pt") && Catch::Contains("version 3"));
  }
  std::filesystem::remove_all(dir);
}
