// `deepkf train --continue`: a checkpoint's weights and optimizer state go on learning from other (grown)
// data, as `deepkf learn` does between iterations. On the project's CP2K silicon data (data/si_cp2k.h5).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

using deepkf::TrainConfig;
using deepkf::Trainer;
using deepkf::TrainerOptions;
using deepkf::test::config_of;
using deepkf::test::options_in;
using json = nlohmann::json;

namespace {

const std::string kSilicon = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";

json small_input(const std::vector<std::string>& systems, std::int64_t steps) {
  json doc = json::parse(R"({
    "model": {
      "type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                     "axis_neuron": 2, "type_one_side": true, "seed": 3},
      "fitting_net": {"neuron": [8, 8], "seed": 3}
    },
    "optimizer": {"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0, "nselect": 8, "groupsize": 4},
    "training": {"training_data": {"batch_size": 1}, "seed": 5, "disp_freq": 1, "save_freq": 1000, "num_threads": 1}
  })");
  doc["training"]["training_data"]["systems"] = systems;
  doc["training"]["numb_steps"] = steps;
  return doc;
}

}  // namespace

TEST_CASE(
    "a continued run (--continue) goes on from the checkpoint's state: on data whose every epoch is one "
    "batch it equals "
    "--restart",
    "[train][continue]") {
  // One frame, batch size 1: every epoch is that frame, so the data order of a restart (epoch 3 onwards) and
  // of a continued run (epoch 0 onwards) is the same, and so must be the weights: the continued run starts
  // from the checkpoint's weights, covariance, lambda and atom draws.
  const auto dir = deepkf::test::make_temp_dir("continue-one-frame");
  const auto si8 = deepkf::Dataset::load({kSilicon + "#/Si8"}, {"Si"});
  deepkf::write_hdf5_systems(dir + "/one.h5", {deepkf::select_frames(si8.systems.at(0), {4})}, {"Si8"});
  const TrainConfig config = config_of(small_input({dir + "/one.h5"}, 6));
  auto comm = deepkf::make_serial_communicator();
  TrainerOptions first = options_in(dir + "/first");
  first.pause_at = 3;
  first.write_model = true;
  const auto paused = Trainer(config, first, comm).run();
  REQUIRE(paused.steps == 3);
  REQUIRE_FALSE(paused.model.empty());
  const std::string checkpoint = dir + "/first/model.ckpt";

  TrainerOptions restart = options_in(dir + "/restart");
  restart.restart = checkpoint;
  Trainer restarted(config, restart, comm);
  REQUIRE(restarted.run().steps == 6);
  TrainerOptions cont = options_in(dir + "/continue");
  cont.continue_from = checkpoint;
  Trainer continued(config, cont, comm);
  CHECK(continued.step() == 3);
  REQUIRE(continued.run().steps == 6);
  CHECK(continued.flat_parameters() == restarted.flat_parameters());
  // The same weights with a new covariance (--init-model) learn otherwise: the filter's state carried over.
  TrainerOptions weights_only = options_in(dir + "/init-model");
  weights_only.init_model = paused.model;
  Trainer fresh(config_of(small_input({dir + "/one.h5"}, 3)), weights_only, comm);
  fresh.run();
  CHECK(fresh.flat_parameters() != continued.flat_parameters());
  CHECK_THAT(deepkf::test::read_text(dir + "/continue/train.log"),
             Catch::Contains("continuing from " + checkpoint + " at step 3"));
}

TEST_CASE("a continued run on grown data counts steps on and takes the new data's order from its start",
          "[train][continue]") {
  const auto dir = deepkf::test::make_temp_dir("continue-grown");
  auto comm = deepkf::make_serial_communicator();
  // 4 steps on Si16 (6 frames): the checkpoint's data position (epoch 0, batch 4) is past nothing in Si16,
  // but the grown data's order has other batches: a --restart would replay the old position in it.
  TrainerOptions first = options_in(dir + "/first");
  REQUIRE(Trainer(config_of(small_input({kSilicon + "#/Si16"}, 4)), first, comm).run().steps == 4);
  json grown = small_input({kSilicon + "#/Si16", kSilicon + "#/Si15"}, 10);
  grown["training"]["training_data"]["repeat"] = {1, 2};
  TrainerOptions cont = options_in(dir + "/continue");
  cont.continue_from = dir + "/first/model.ckpt";
  Trainer continued(config_of(grown), cont, comm);
  CHECK(continued.step() == 4);
  const auto result = continued.run();
  CHECK(result.steps == 10);
  const std::string log = deepkf::test::read_text(dir + "/continue/train.log");
  CHECK_THAT(log, Catch::Contains("training data: 2 systems, 11 frames"));
  CHECK_THAT(log, Catch::Contains("training_data.repeat: 16 frame visits per epoch (11 frames)"));
  // The learning curve of the continued run starts after the checkpoint's step.
  std::ifstream lcurve(dir + "/continue/lcurve.out");
  std::string line;
  while (std::getline(lcurve, line) && line.rfind('#', 0) == 0) {
  }  // the header lines
  CHECK(std::stoll(line) == 5);

  // Nothing left to train, and the two ways to resume at once, are errors.
  TrainerOptions done = options_in(dir + "/done");
  done.continue_from = dir + "/continue/model.ckpt";
  Trainer finished(config_of(grown), done, comm);
  CHECK_THROWS_WITH(finished.run(),
                    Catch::Contains("is at step 10 and 'training.numb_steps' in test-input.json is 10"));
  TrainerOptions both = options_in(dir + "/both");
  both.continue_from = done.continue_from;
  both.restart = done.continue_from;
  CHECK_THROWS_WITH(Trainer(config_of(grown), both, comm),
                    "--restart and --continue both name a checkpoint: give one");
}
