// DeePMD-kit's own training inputs (tests/train/deepmd-kit-inputs, copied unchanged from its repository)
// train here as they are, on the water data laid out where those inputs expect it: the PyTorch water
// example (its numb_steps cut to 2, no bias fit after training) and its LKF test input (1 step, as written);
// the same example with num_epoch is read; its se_e2_r, se_e3, hybrid, se_e2_a_tebd, se_e3_tebd and
// se_atten examples train (2 steps; se_atten's are partly read only).
// DeePMD-kit's LMDB example (examples/lmdb_downsample_data, read from a DeePMD-kit checkout; skipped without
// one) trains as it is but for its length.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "src/core/Communicator.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kInputs = std::string(DEEPKF_SOURCE_DIR) + "/tests/train/deepmd-kit-inputs";

deepkf::TrainResult train(const std::string& input, const std::string& output_dir) {
  const auto cfg = deepkf::TrainConfig::from_file(input);
  deepkf::TrainerOptions options;
  options.output_dir = output_dir;
  options.progress = 0;
  deepkf::Trainer trainer(cfg, options, deepkf::make_serial_communicator());
  return trainer.run();
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, true, true);
}

// DeePMD-kit's water model (1,014,182 weights) from `doc`, written to `path` with numb_steps cut to `steps`,
// and trained into `output_dir` with 2 GiB for the memory plan (which picks the covariance's block size and
// precision for it).
deepkf::TrainResult train_two_steps(json doc, const std::string& path, const std::string& output_dir,
                                    int steps = 2) {
  doc["training"]["numb_steps"] = steps;
  // The energy bias fit after training (change_bias_after_training) evaluates all 320 training frames with
  // the 1M-weight model: negligible after a real run, 100 times the time of these 2 steps.
  doc["training"]["change_bias_after_training"] = false;
  // Likewise the 4 frames replayed in each energy update (energy_replay) would double these 2 steps.
  doc["training"]["energy_replay"] = 0;
  std::ofstream(path) << doc.dump(2);
  ::setenv("DEEPKF_AVAILABLE_MEMORY", "2GiB", 1);
  const auto result = train(path, output_dir);
  ::unsetenv("DEEPKF_AVAILABLE_MEMORY");
  return result;
}

// DeePMD-kit's layout of its water examples in a new temporary folder (root): the folder
// examples/water/<name> (example) with the shared water data at examples/water/data, where the examples'
// "../data/data_*" find it. Skips the test without the shared dataset.
struct WaterExample {
  std::string root, example;
};
WaterExample water_example(const std::string& temp_name, const std::string& name) {
  const std::string water = deepkf::test::require_shared_dataset("water");
  WaterExample w{deepkf::test::make_temp_dir(temp_name), ""};
  w.example = w.root + "/examples/water/" + name;
  fs::create_directories(w.example);
  fs::create_directory_symlink(water, w.root + "/examples/water/data");
  return w;
}

}  // namespace

TEST_CASE("DeePMD-kit's LKF test input trains unchanged", "[train][deepmd]") {
  const std::string water = deepkf::test::require_shared_dataset("water");
  // Its systems are "pt/water/data/data_0" under the directory the run starts in.
  const std::string root = deepkf::test::make_temp_dir("lkf-input");
  fs::create_directories(root + "/pt/water");
  fs::create_directory_symlink(water, root + "/pt/water/data");
  deepkf::test::in_directory(root, [&] {
    const auto result = train(kInputs + "/lkf.json", root + "/out");
    CHECK(result.steps == 1);
    CHECK(std::isfinite(result.validation.rmse_f()));
    const json resolved = read_json(root + "/out/input.resolved.json");
    CHECK(resolved["optimizer"]["type"] == "RLEKF");
    CHECK(resolved["optimizer"]["kf_blocksize"] == 1024);
    CHECK(resolved["training"]["training_data"]["systems"][0] == "pt/water/data/data_0");
  });
  fs::remove_all(root);
}

TEST_CASE("DeePMD-kit's water example with num_epoch is read as it is", "[train][deepmd]") {
  // The file only: its data is not needed to read it. The trainer turns the epochs into steps once the data
  // is open (tests/cli/cli_dp_workflow.sh trains with num_epoch).
  const auto cfg = deepkf::TrainConfig::from_file(kInputs + "/input_torch_num_epoch.json");
  CHECK(cfg.numb_epoch == 100.0);
  CHECK(cfg.numb_steps == 0);
  CHECK(cfg.training_data.systems.size() == 3);
}

TEST_CASE("DeePMD-kit's PyTorch water example trains unchanged but for its length", "[train][deepmd]") {
  // examples/water/se_e2_a/input_torch.json with the data in examples/water/data.
  const auto [root, example] = water_example("torch-input", "se_e2_a");
  const auto result =
      train_two_steps(read_json(kInputs + "/input_torch.json"), example + "/input_torch.json", root + "/out");
  CHECK(result.steps == 2);
  CHECK(std::isfinite(result.validation.rmse_e()));
  CHECK(std::isfinite(result.validation.rmse_f()));
  const json optimizer = read_json(root + "/out/input.resolved.json")["optimizer"];
  CHECK(optimizer["type"] == "RLEKF");
  CHECK(optimizer["kf_blocksize"].is_number_integer());
  std::ifstream log(root + "/out/train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Matchers::Contains("input key training.stat_file has no effect in deepkf"));
  CHECK_THAT(text, Catch::Matchers::Contains("input keys of another optimizer, unused with RLEKF:") &&
                       Catch::Matchers::Contains("loss.start_pref_f"));
  CHECK_THAT(text, Catch::Matchers::Contains("memory plan: kf_blocksize 512, float32"));
  fs::remove_all(root);  // the checkpoint holds 1 GB of covariance
}

TEST_CASE(
    "DeePMD-kit's se_e2_r, se_e3, hybrid, se_e2_a_tebd and se_e3_tebd water examples train unchanged but "
    "for their length",
    "[train][deepmd]") {
  // examples/water/{se_e2_r, se_e3, hybrid, se_e2_a_tebd}/input.json and se_e3_tebd/input_torch.json with
  // the data in examples/water/data (se_e3: sel "auto"; hybrid: se_e2_a and se_e2_r; se_e2_a_tebd:
  // se_a_ebd_v2 with a type embedding; se_e3_tebd: sel 40 of any type, its own type embedding).
  const std::string descriptor =
      GENERATE(as<std::string>{}, "se_e2_r", "se_e3", "hybrid", "se_e2_a_tebd", "se_e3_tebd");
  INFO("descriptor " << descriptor);
  const auto [root, example] = water_example(descriptor + "-input", descriptor);
  const auto result = train_two_steps(read_json(kInputs + "/" + descriptor + "_input.json"),
                                      example + "/input.json", root + "/out");
  CHECK(result.steps == 2);
  CHECK(std::isfinite(result.validation.rmse_e()));
  CHECK(std::isfinite(result.validation.rmse_f()));
  const json resolved = read_json(root + "/out/input.resolved.json");
  const bool tebd = descriptor == "se_e2_a_tebd";
  CHECK(resolved["model"]["descriptor"]["type"] == (tebd ? "se_a_ebd_v2" : descriptor));
  const json& desc = resolved["model"]["descriptor"];
  const json neuron = descriptor == "hybrid" ? desc["list"][1]["neuron"] : desc["neuron"];
  const bool three_body = descriptor == "se_e3" || descriptor == "se_e3_tebd";
  CHECK(neuron == (three_body ? json({2, 4, 8}) : tebd ? json({25, 50, 100}) : json({5, 10, 20})));
  if (tebd) CHECK(resolved["model"]["type_embedding"]["neuron"] == json({2, 4, 8}));
  if (descriptor == "se_e3_tebd") {
    CHECK(desc["sel"] == 40);
    CHECK(desc["tebd_dim"] == 8);
    CHECK(desc["tebd_input_mode"] == "concat");
  }
  CHECK(resolved["optimizer"]["type"] == "RLEKF");
  fs::remove_all(root);
}

TEST_CASE("DeePMD-kit's se_atten water examples are read unchanged, and its main one trains",
          "[train][deepmd]") {
  // examples/water/se_atten/{input, input_torch}.json (se_atten_v2; dpa1 with type_one_side and a
  // temperature), se_atten_compressible (attn_layer 0) and se_atten_dpa1_compat (se_atten, concat): sel 120
  // of any type, attention of width 128. The attention costs about 10x se_e2_a's arithmetic per atom, so that
  // RLEKF's first step with its automatic p0 (16 gradients) takes minutes on two cores: the example without
  // attention layers (se_atten_compressible) trains one step on the mixed neighbour list and is compressed,
  // the others are read, built and evaluated on a water frame (their attention is tested in tests/model and
  // the LAMMPS plugin's tests).
  const std::string name = GENERATE(as<std::string>{}, "se_atten_input", "se_atten_input_torch",
                                    "se_atten_compressible_input", "se_atten_dpa1_compat_input");
  INFO("input " << name);
  const auto [root, example] = water_example(name, "se_atten");
  const json input = read_json(kInputs + "/" + name + ".json");
  json desc;
  if (name == "se_atten_compressible_input") {
    const auto result = train_two_steps(input, example + "/input.json", root + "/out", 1);
    CHECK(result.steps == 1);
    CHECK(std::isfinite(result.validation.rmse_e()));
    CHECK(std::isfinite(result.validation.rmse_f()));
    CHECK(read_json(root + "/out/input.resolved.json")["optimizer"]["type"] == "RLEKF");
    auto trained = deepkf::load_model(root + "/out/model.pt");
    desc = trained.config.to_json()["descriptor"];
    // The form DeePMD-kit compresses: the compressed model (G(s) from its table) gives the trained model's
    // energy and forces on a held-out frame.
    const auto frames = deepkf::read_systems(example + "/../data/data_3");
    REQUIRE(!frames.empty());
    const auto b = deepkf::make_batch(frames.front(), {0}, trained.config, torch::kCPU, torch::kFloat64);
    const auto plain = trained.model->evaluate(b.coord, b.atype, b.nlist, b.shift);
    trained.model->compress(deepkf::TableSettings{});
    const auto tabulated = trained.model->evaluate(b.coord, b.atype, b.nlist, b.shift);
    CHECK(std::abs(tabulated.energy.item<double>() - plain.energy.item<double>()) <
          1e-8 * static_cast<double>(b.natoms));
    CHECK((tabulated.force - plain.force).abs().max().item<double>() < 1e-8);
  } else {
    std::ofstream(example + "/input.json") << input.dump(2);
    const auto cfg = deepkf::TrainConfig::from_file(example + "/input.json");
    const auto mc = deepkf::ModelConfig::from_json(cfg.model, cfg.file);
    deepkf::DeepPot model(mc);
    const auto frames = deepkf::read_systems(example + "/../data/data_3");
    REQUIRE(!frames.empty());
    const auto b = deepkf::make_batch(frames.front(), {0}, mc, torch::kCPU, torch::kFloat64);
    const auto out = model->evaluate(b.coord, b.atype, b.nlist, b.shift);
    CHECK(std::isfinite(out.energy.item<double>()));
    CHECK(std::isfinite(out.force.abs().max().item<double>()));
    desc = mc.to_json()["descriptor"];
  }
  CHECK(desc["type"] == "se_atten");
  CHECK(desc["sel"] == 120);
  CHECK(desc["attn_layer"] == input["model"]["descriptor"]["attn_layer"]);
  const bool concat = name == "se_atten_dpa1_compat_input" || name == "se_atten_input_torch";
  CHECK(desc["tebd_input_mode"] == (concat ? "concat" : "strip"));
  CHECK(desc["smooth_type_embedding"] == !concat);
  CHECK(desc["tebd_dim"] == 8);
  fs::remove_all(root);
}

TEST_CASE("DeePMD-kit's LMDB example trains unchanged but for its length", "[train][deepmd][lmdb]") {
  const std::string example = deepkf::test::require_deepmd_kit_file("examples/lmdb_downsample_data");
  (void)deepkf::test::require_deepmd_kit_file("examples/lmdb_downsample_data/water_training.lmdb/data.mdb");
  // input_lmdb.json next to its databases, as in the example's folder.
  const std::string root = deepkf::test::make_temp_dir("lmdb-input");
  for (const char* db : {"water_training.lmdb", "water_validation.lmdb"})
    fs::create_directory_symlink(example + "/" + db, root + "/" + db);
  const auto result =
      train_two_steps(read_json(example + "/input_lmdb.json"), root + "/input_lmdb.json", root + "/out");
  CHECK(result.steps == 2);
  CHECK(std::isfinite(result.validation.rmse_e()));
  CHECK(std::isfinite(result.validation.rmse_f()));
  const json resolved = read_json(root + "/out/input.resolved.json");
  CHECK(resolved["training"]["training_data"]["systems"][0] == "water_training.lmdb");
  fs::remove_all(root);  // the checkpoint holds 1 GB of covariance
}
