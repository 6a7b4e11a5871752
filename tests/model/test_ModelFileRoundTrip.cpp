// The model file: a saved model loads back bit-identically; missing, truncated, garbage and corrupt files,
// checkpoints and newer format versions give ModelError naming the file, and format 1 still loads;
// DeePMD-kit's model files (.pb, .pth, .pt) are named as such.
#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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

namespace {

// A TensorFlow GraphDef (DeePMD-kit's frozen .pb) of placeholder nodes: field 1 (node) holding a NodeDef of
// name (field 1) and op (field 2).
std::string graph_def(const std::vector<std::string>& names) {
  const auto field = [](char tag, const std::string& bytes) {
    std::string out(1, tag);
    for (auto n = bytes.size();; n >>= 7) {
      out += static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
      if (n <= 0x7f) break;
    }
    return out + bytes;
  };
  std::string graph;
  for (const auto& name : names) graph += field(0x0a, field(0x0a, name) + field(0x12, "Placeholder"));
  return graph;
}

}  // namespace

TEST_CASE("DeePMD-kit model files are named as such, not as corrupt deepkf files", "[model]") {
  const auto dir = make_temp_dir("foreign_model");
  const auto expect_deepmd_kit = [](const std::string& file, const std::string& kind) {
    INFO(file);
    try {
      load_model(file);
      FAIL("loaded " << file);
    } catch (const ModelError& e) {
      // Formerly: "... is corrupt or truncated ... write it again (deepkf export or freeze)", or "has no
      // deepkf metadata".
      CHECK_THAT(std::string(e.what()),
                 Catch::StartsWith("'" + file + "' is " + kind) &&
                     Catch::Contains("which deepkf cannot read") && Catch::Contains("deepkf train") &&
                     Catch::Contains("deepkf freeze") && Catch::Contains("docs/from-deepmd-kit.md") &&
                     !Catch::Contains("corrupt") && !Catch::Contains("\n"));
    }
  };
  SECTION("a frozen TensorFlow graph (.pb)") {
    const auto pb = dir + "/frozen_model.pb";
    std::ofstream(pb, std::ios::binary) << graph_def({"t_type", "descrpt_attr/rcut", "model_attr/tmap"});
    expect_deepmd_kit(pb, "a DeePMD-kit model file (a TensorFlow frozen graph");
    CHECK_THROWS_WITH(read_model_metadata(pb), Catch::Contains("DeePMD-kit model file"));
  }
  SECTION("a TorchScript model of DeePMD-kit's PyTorch backend (.pth)") {
    torch::jit::Module script("__torch__.deepmd.pt.model.model.ener_model.EnergyModel");
    script.register_buffer("out_bias", torch::zeros({2}));
    script.save(dir + "/frozen_model.pth");
    expect_deepmd_kit(dir + "/frozen_model.pth",
                      "a DeePMD-kit model file (PyTorch backend, a TorchScript model)");
  }
  SECTION("a state dict of DeePMD-kit's PyTorch backend (.pt checkpoint)") {
    c10::Dict<std::string, at::Tensor> state;
    state.insert("model.Default.atomic_model.out_bias", torch::zeros({1, 2, 1}));
    const auto bytes = torch::pickle_save(state);
    std::ofstream(dir + "/model.ckpt-100.pt", std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    expect_deepmd_kit(dir + "/model.ckpt-100.pt",
                      "a DeePMD-kit model file (PyTorch backend, a torch.save file)");
  }
  SECTION("another TorchScript model") {
    torch::jit::Module script("__torch__.Net");
    script.register_buffer("w", torch::zeros({2}));
    script.save(dir + "/net.pth");
    expect_deepmd_kit(dir + "/net.pth", "a TorchScript model without deepkf's metadata (as DeePMD-kit's");
  }
  SECTION("a damaged deepkf model file is still called corrupt") {
    save_model(dir + "/model.pt", small_model(false, true), nlohmann::json::object());
    const auto size = std::filesystem::file_size(dir + "/model.pt");
    std::filesystem::resize_file(dir + "/model.pt", size - 30);
    CHECK_THROWS_WITH(load_model(dir + "/model.pt"), Catch::Contains("is corrupt or truncated") &&
                                                         Catch::Contains("deepkf export or freeze"));
  }
  std::filesystem::remove_all(dir);
}
