// End-to-end training tests on the real silicon dataset (../shared/datasets/si_mlearn): RLEKF against Adam
// per epoch, the held-out split, init_model, energy_last, the memory plan's stop, sys_probs and trainable.
// Restarts and checkpoints: test_TrainerRestart.cpp.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/geometry/NeighborList.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

namespace fs = std::filesystem;
using deepkf::TrainConfig;
using deepkf::Trainer;
using deepkf::TrainerOptions;
using deepkf::test::config_of;
using deepkf::test::silicon_input;
using json = nlohmann::json;

namespace {

// The closest distance between two atoms within rcut over every frame of a silicon system (periodic images
// included) and the number of frames, from the neighbour lists of src/geometry.
std::pair<double, double> closest_pair(const std::string& system, double rcut) {
  const auto data = deepkf::Dataset::load({system}, {"Si"});
  double best = std::numeric_limits<double>::infinity(), frames = 0;
  const std::vector<int> sel = {400};
  for (const auto& s : data.systems) {
    for (std::int64_t f = 0; f < s.nframes; ++f, ++frames) {
      const double* x = s.coord.data() + f * s.natoms * 3;
      const auto nl =
          deepkf::build_neighbor_list(x, s.natoms, s.atom_types.data(), s.box.data() + f * 9, rcut, sel);
      REQUIRE(nl.ndropped == 0);
      for (std::int64_t i = 0; i < s.natoms; ++i) {
        for (std::int64_t k = 0; k < sel[0]; ++k) {
          const auto j = nl.index[static_cast<std::size_t>(i * sel[0] + k)];
          if (j < 0) continue;
          double r2 = 0;
          for (int d = 0; d < 3; ++d) {
            const double r =
                x[3 * j + d] + nl.shift[static_cast<std::size_t>((i * sel[0] + k) * 3 + d)] - x[3 * i + d];
            r2 += r * r;
          }
          best = std::min(best, std::sqrt(r2));
        }
      }
    }
  }
  return {best, frames};
}

}  // namespace

TEST_CASE("RLEKF lowers the validation force error faster per epoch than Adam on silicon", "[train][rlekf]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  const std::vector<std::string> train = {si + "/train"};
  const std::vector<std::string> valid = {si + "/test"};
  // One epoch: 214 training frames in batches of 1.
  const std::int64_t epoch = 214;
  auto comm = deepkf::make_serial_communicator();
  double rmse_f[2] = {0, 0};
  int k = 0;
  for (const std::string optimizer : {"LKF", "Adam"}) {
    TrainerOptions options;
    options.output_dir = deepkf::test::make_temp_dir("compare");
    options.progress = 0;
    json doc = silicon_input(train, valid, optimizer, epoch);
    if (optimizer == "Adam")
      doc["optimizer"]["learning_rate"] = {{"start_lr", 1e-3}, {"stop_lr", 1e-5}, {"decay_steps", 50}};
    Trainer trainer(config_of(doc), options, comm);
    const auto result = trainer.run();
    REQUIRE(result.validation.has_force());
    rmse_f[k++] = result.validation.rmse_f();
  }
  INFO("validation force RMSE after one epoch: RLEKF " << rmse_f[0] << " eV/A, Adam " << rmse_f[1]
                                                       << " eV/A");
  CHECK(rmse_f[0] < rmse_f[1]);
  // The trivial baseline (predicting zero force) is 0.87 eV/A on this data: RLEKF must beat it clearly.
  CHECK(rmse_f[0] < 0.5);
}

TEST_CASE("training without validation data can hold out a seeded fraction", "[train][split]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  json doc = silicon_input({si + "/train/sys_Si63"}, {}, "LKF", 2);
  doc["training"].erase("validation_data");
  doc["training"]["validation_fraction"] = 0.25;
  TrainerOptions options;
  options.output_dir = deepkf::test::make_temp_dir("split");
  options.progress = 0;
  Trainer trainer(config_of(doc), options, deepkf::make_serial_communicator());
  const auto result = trainer.run();
  // round(0.25 * 57) = 14 held-out frames, all evaluated at the end of training.
  CHECK(result.validation.e_count == 14);
  std::ifstream lcurve(options.output_dir + "/lcurve.out");
  std::string header;
  std::getline(lcurve, header);
  CHECK(header.find("rmse_f_val") != std::string::npos);
}

TEST_CASE("init_model starts from a trained model's weights and trains on", "[train][init]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  auto comm = deepkf::make_serial_communicator();
  TrainerOptions first;
  first.output_dir = deepkf::test::make_temp_dir("init-a");
  first.progress = 0;
  Trainer a(config_of(silicon_input({si + "/train/sys_Si16"}, {si + "/test/sys_Si24"}, "LKF", 4)), first, comm);
  const auto ra = a.run();
  REQUIRE(fs::exists(ra.model));

  // Fine-tuning on other data with another optimizer: the weights start where the model ended.
  TrainerOptions second;
  second.output_dir = deepkf::test::make_temp_dir("init-b");
  second.progress = 0;
  second.init_model = ra.model;
  Trainer b(config_of(silicon_input({si + "/train/sys_Si24"}, {si + "/test/sys_Si24"}, "Adam", 3)), second,
            comm);
  CHECK(deepkf::test::max_abs_difference(b.flat_parameters(), a.flat_parameters()) == 0.0);
  CHECK(b.step() == 0);
  const auto rb = b.run();
  CHECK(rb.steps == 3);
  CHECK(deepkf::test::max_abs_difference(b.flat_parameters(), a.flat_parameters()) > 0.0);
  CHECK(std::isfinite(rb.validation.rmse_f()));

  // The training range: the closest neighbours of sys_Si16, then of sys_Si24 added to the file's.
  const auto [d16, n16] = closest_pair(si + "/train/sys_Si16", 4.0);
  const auto [d24, n24] = closest_pair(si + "/train/sys_Si24", 4.0);
  const auto range_a = deepkf::read_model_metadata(ra.model)["training_range"];
  const auto range_b = deepkf::read_model_metadata(rb.model)["training_range"];
  CHECK(range_a["min_distance"][0][0].get<double>() == Approx(d16).epsilon(1e-13));
  CHECK(range_a["frames"] == n16);
  CHECK(range_b["min_distance"][0][0].get<double>() == Approx(std::min(d16, d24)).epsilon(1e-13));
  CHECK(range_b["frames"] == n16 + n24);
}

TEST_CASE("with energy_last a step ends on a second energy update, which fits the batch's energy",
          "[train][rlekf]") {
  // One frame, trained for one step and then evaluated: with energy_last the step's last update is an
  // energy update on that very frame, so its energy error must end below that of the same step without it.
  // The sequential step and the joint one (where energy_last follows the joint update) alike.
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  const std::string one = deepkf::test::make_temp_dir("one-frame") + "/sys";
  deepkf::write_npy_system(one, deepkf::open_npy_system(si + "/train/sys_Si12")->read({0}));
  auto comm = deepkf::make_serial_communicator();
  // nselect 12 in groups of 6: one energy and two force updates, and the closing energy update; joint: one
  // update of three measurements, and the closing energy update.
  for (const auto& [update, with_last, without_last] :
       {std::tuple{"sequential", 4, 3}, std::tuple{"joint", 2, 1}}) {
    double rmse_e[2] = {0, 0};
    std::string display[2];
    for (const bool last : {true, false}) {
      json doc = silicon_input({one}, {one}, "LKF", 1);
      doc["optimizer"]["energy_last"] = last;
      doc["optimizer"]["kf_update"] = update;
      doc["optimizer"]["log_filter"] = true;
      // The bias fit after training would make the one frame's error zero (to rounding) in both runs, and
      // replayed frames (here copies of the one frame) would join the energy updates.
      doc["training"]["change_bias_after_training"] = false;
      doc["optimizer"]["energy_replay"] = 0;
      doc["training"]["disp_freq"] = 1;
      TrainerOptions options;
      options.output_dir = deepkf::test::make_temp_dir("energy-last");
      options.progress = 0;
      Trainer trainer(config_of(doc), options, comm);
      const auto result = trainer.run();
      REQUIRE(result.validation.e_count == 1);
      rmse_e[last ? 0 : 1] = result.validation.rmse_e();
      std::ifstream log(options.output_dir + "/train.log");
      for (std::string line; std::getline(log, line);)
        if (line.find("filter:") != std::string::npos) display[last ? 0 : 1] = line;
    }
    INFO("kf_update " << update << "; display lines: " << display[0] << " | " << display[1]);
    CHECK(display[0].find("filter: " + std::to_string(with_last) + " updates") != std::string::npos);
    CHECK(display[1].find("filter: " + std::to_string(without_last) + " updates") != std::string::npos);
    INFO("energy error of the trained frame after one step: energy_last " << rmse_e[0] << " eV/atom, without "
                                                                          << rmse_e[1] << " eV/atom");
    CHECK(rmse_e[0] < 0.5 * rmse_e[1]);
  }
}

TEST_CASE("a covariance that does not fit stops the run at set-up with the options that would fit",
          "[train][memory]") {
  // The shipped CP2K silicon data; the host's memory set to 8 MiB for this run.
  json doc = silicon_input({std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"}, {}, "RLEKF", 3);
  doc["training"].erase("validation_data");
  doc["optimizer"]["kf_blocksize"] = 5120;
  doc["optimizer"]["p_precision"] = "float64";
  auto comm = deepkf::make_serial_communicator();
  TrainerOptions options;
  options.output_dir = deepkf::test::make_temp_dir("memory");
  options.progress = 0;
  ::setenv("DEEPKF_AVAILABLE_MEMORY", "8MiB", 1);
  CHECK_THROWS_AS(Trainer(config_of(doc), options, comm), deepkf::ResourceError);
  CHECK_THROWS_WITH(Trainer(config_of(doc), options, comm),
                    Catch::Matchers::StartsWith("not enough memory: kf_blocksize 5120, float64 needs") &&
                        Catch::Matchers::Contains("8.0 MiB available (host") &&
                        Catch::Matchers::Contains("these fit: kf_blocksize 512, float32 ("));
  // Left to "auto", the plan takes what fits and training runs.
  doc["optimizer"].erase("kf_blocksize");
  doc["optimizer"].erase("p_precision");
  Trainer fitted(config_of(doc), options, comm);
  ::unsetenv("DEEPKF_AVAILABLE_MEMORY");
  CHECK(fitted.run().steps == 3);
  std::ifstream resolved(options.output_dir + "/input.resolved.json");
  const auto settings = json::parse(resolved)["optimizer"];
  CHECK(settings["kf_blocksize"] == 512);
  CHECK(settings["p_precision"] == "float32");

  // A restart with room for more keeps the checkpoint's choice (its covariance blocks are those).
  doc["training"]["numb_steps"] = 5;
  TrainerOptions again = options;
  again.restart = options.output_dir + "/model.ckpt";
  Trainer restarted(config_of(doc), again, comm);
  CHECK(restarted.run().steps == 5);
  std::ifstream resolved_again(options.output_dir + "/input.resolved.json");
  CHECK(json::parse(resolved_again)["optimizer"]["kf_blocksize"] == 512);
}

TEST_CASE("training_data.sys_probs shares each epoch between the systems its paths expand to",
          "[train][probs]") {
  // One path, three systems (Si15: 5 frames, Si16: 6, Si8: 27); batch size 1, so 38 batches per epoch.
  json doc = silicon_input({std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"}, {}, "Adam", 2);
  doc["training"].erase("validation_data");
  doc["training"]["training_data"]["sys_probs"] = {0.5, -1, 0.25};
  TrainerOptions options;
  options.output_dir = deepkf::test::make_temp_dir("sys-probs");
  options.progress = 0;
  auto comm = deepkf::make_serial_communicator();
  CHECK(Trainer(config_of(doc), options, comm).run().steps == 2);
  std::ifstream log(options.output_dir + "/train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Matchers::Contains("training systems drawn by sys_probs: 38 batches per epoch"));
  CHECK_THAT(text, Catch::Matchers::Contains("  0.5000 (19.0 batches per epoch, 5 frames) "));
  CHECK_THAT(text, Catch::Matchers::Contains("  0.2500 (9.5 batches per epoch, 6 frames) "));
  CHECK_THAT(text, Catch::Matchers::Contains("  0.2500 (9.5 batches per epoch, 27 frames) "));
  std::ifstream resolved(options.output_dir + "/input.resolved.json");
  CHECK(json::parse(resolved)["training"]["training_data"]["sys_probs"] == json({0.5, -1, 0.25}));

  // One probability per path where the path holds three systems: the message counts them.
  doc["training"]["training_data"]["sys_probs"] = {1.0};
  CHECK_THROWS_WITH(Trainer(config_of(doc), options, comm),
                    "'training.training_data.sys_probs' in test-input.json is [1.0]: must have one entry per "
                    "training system, and its paths hold 3 systems");
  doc["training"]["training_data"].erase("sys_probs");
  doc["training"]["training_data"]["auto_prob_style"] = "prob_sys_size;0:1:1;1:4:1";
  CHECK_THROWS_WITH(Trainer(config_of(doc), options, comm),
                    "'training.training_data.auto_prob' in test-input.json is \"prob_sys_size;0:1:1;1:4:1\": "
                    "names systems up to 3, but its paths hold 3 systems (0 to 2)");
}

namespace {

// Whether each named parameter of `model` still holds the value a fresh model of its configuration starts
// from (the same seed draws the same initial weights).
std::map<std::string, bool> unchanged_since_init(const deepkf::DeepPot& model) {
  const deepkf::DeepPot fresh(model->config());
  std::map<std::string, bool> out;
  for (const auto& p : model->named_parameters())
    out[p.key()] = torch::equal(p.value().detach().cpu(), fresh->named_parameters()[p.key()].detach());
  return out;
}

}  // namespace

TEST_CASE("trainable false keeps the embedding nets at their initial weights, with RLEKF and Adam",
          "[train][trainable]") {
  const std::string si = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";
  auto comm = deepkf::make_serial_communicator();
  for (const std::string optimizer : {"RLEKF", "Adam"}) {
    INFO(optimizer);
    json doc = silicon_input({si}, {}, optimizer, 3);
    doc["training"].erase("validation_data");
    doc["model"]["descriptor"]["trainable"] = false;
    doc["model"]["fitting_net"]["trainable"] = {true, false, true};  // the second hidden layer frozen too
    const auto options = deepkf::test::options_in(deepkf::test::make_temp_dir("frozen"), true);
    CHECK(Trainer(config_of(doc), options, comm).run().steps == 3);
    const auto loaded = deepkf::load_model(options.output_dir + "/model.pt", torch::kCPU);
    CHECK_FALSE(loaded.config.descriptor_trainable);
    int frozen = 0, trained = 0;
    for (const auto& [name, same] : unchanged_since_init(loaded.model)) {
      INFO(name);
      const auto dot = name.find('.');
      const std::string tensor = name.substr(dot + 1);  // w1, b1, dt1: the second layer
      const bool should_be_frozen =
          name.rfind("embedding_", 0) == 0 || tensor == "w1" || tensor == "b1" || tensor == "dt1";
      CHECK(same == should_be_frozen);
      (should_be_frozen ? frozen : trained) += 1;
    }
    CHECK(frozen > 0);
    CHECK(trained > 0);
    std::ifstream log(options.output_dir + "/train.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    CHECK_THAT(text,
               Catch::Matchers::Contains("parameters trained (") &&
                   Catch::Matchers::Contains(
                       std::to_string(loaded.model->trainable_count()) + " parameters trained (" +
                       std::to_string(loaded.model->parameter_count() - loaded.model->trainable_count()) +
                       " frozen)"));

    // A restart whose input trains other weights than the checkpoint's run is refused by name.
    json other = doc;
    other["model"]["descriptor"]["trainable"] = true;
    other["training"]["numb_steps"] = 5;
    auto again = options;
    again.restart = options.output_dir + "/model.ckpt";
    CHECK_THROWS_WITH(Trainer(config_of(other), again, comm),
                      Catch::Matchers::Contains("descriptor.trainable: none vs false"));
    // Fine-tuning from the model file with everything trainable moves the embedding nets too.
    auto tune = deepkf::test::options_in(deepkf::test::make_temp_dir("unfrozen"), true);
    tune.init_model = options.output_dir + "/model.pt";
    json all = doc;
    all["model"]["descriptor"].erase("trainable");
    all["model"]["fitting_net"].erase("trainable");
    Trainer(config_of(all), tune, comm).run();
    const auto tuned = deepkf::load_model(tune.output_dir + "/model.pt", torch::kCPU);
    CHECK(tuned.config.descriptor_trainable);
    CHECK_FALSE(torch::equal(tuned.model->named_parameters()["embedding_0.w0"],
                             loaded.model->named_parameters()["embedding_0.w0"]));
  }
}
