// Selection by the Kalman sigma of one RLEKF model: the scorer reads the iteration's checkpoint, maps the
// dump's elements onto the model's type map, applies the stored calibration, and scores frames far from the
// training data above the training frames themselves; a checkpoint without covariance is an error naming it.
#include <torch/torch.h>  // before Catch2: glog's CHECK must not replace Catch2's

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/learn/FrameScorer.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/CheckpointCovariance.hpp"
#include "src/train/Trainer.hpp"
#include "src/uncertainty/KalmanUncertainty.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using json = nlohmann::json;

namespace {

const std::string kSiData = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";

// A small model trained on the project's silicon data (20% held out, so that the run calibrates its sigma).
std::string train(const std::string& optimizer, const std::string& dir) {
  json doc = json::parse(R"({
    "model": {"type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                     "axis_neuron": 2, "seed": 3},
      "fitting_net": {"neuron": [8, 8], "resnet_dt": true, "seed": 3}},
    "training": {"training_data": {"batch_size": 1}, "validation_fraction": 0.2, "numb_steps": 20, "calibration_frames": 4,
                 "seed": 5, "disp_freq": 1000000, "save_freq": 1000000, "num_threads": 1}
  })");
  doc["training"]["training_data"]["systems"] = {kSiData};
  doc["optimizer"] = optimizer == "Adam" ? json{{"type", "Adam"}}
                                         : json{{"type", "RLEKF"}, {"kf_blocksize", 64}, {"p0", 10.0}};
  TrainerOptions options;
  options.output_dir = dir;
  options.progress = 0;
  Trainer trainer(TrainConfig::from_json(doc, "test-input.json", "/"), options, make_serial_communicator());
  return trainer.run().checkpoint;
}

// The Si8 frames of the data as a dump would give them: elements {"H", "Si"}, so that the scorer must map
// type 1 onto the model's type 0; each atom displaced at random by up to `shake` A per direction.
ExploredFrames dumped_si8(double shake) {
  ExploredFrames t;
  t.frames = open_dataset({kSiData + "#/Si8"}, {"Si"}).systems.at(0)->read_all();
  t.frames.energy.clear();  // a dump has no labels
  t.frames.force.clear();
  t.frames.virial.clear();
  t.frames.type_map = {"H", "Si"};
  for (auto& type : t.frames.atom_types) type = 1;
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-shake, shake);
  for (auto& x : t.frames.coord) x += u(gen);
  for (std::int64_t f = 0; f < t.frames.nframes; ++f) t.steps.push_back(10 * f);
  return t;
}

// The scorer of select.method "kalman_sigma" with `force_atoms` atoms per frame (0: every atom).
std::unique_ptr<FrameScorer> kalman_scorer(std::int64_t force_atoms) {
  SelectConfig select;
  select.method = "kalman_sigma";
  select.force_atoms = force_atoms;
  return make_frame_scorer(select, 1);
}

}  // namespace

TEST_CASE("the Kalman sigma scorer gives the checkpoint's calibrated force sigma per frame",
          "[learn][select][uncertainty]") {
  const auto dir = test::make_temp_dir("kalman-scorer");
  const std::string checkpoint = train("RLEKF", dir + "/rlekf");
  const auto scorer = kalman_scorer(0);
  scorer->use_models({checkpoint, "another member's checkpoint, not read"});
  CHECK(scorer->describe() == "max Kalman force sigma (eV/A)");

  const ExploredFrames near = dumped_si8(0.0);
  const auto scores = scorer->score({dir, near});
  REQUIRE(scores.size() == static_cast<std::size_t>(near.frames.nframes));

  // The same numbers from the uncertainty code directly: the stored calibration, every atom.
  auto ckpt = read_checkpoint(checkpoint, torch::kCPU);
  const auto comm = make_serial_communicator();
  auto filter = checkpoint_covariance(ckpt, checkpoint, comm);
  const auto calibration =
      UncertaintyCalibration::from_json(ckpt.meta.at("uncertainty_calibration"), "checkpoint");
  REQUIRE(calibration.has_force());
  auto opened = open_dataset({kSiData + "#/Si8"}, {"Si"});
  UncertaintyOptions options;
  options.force_atoms = 0;
  const auto direct = score_frames(ckpt.model, *filter, whole(opened.systems), options, *comm);
  REQUIRE(direct.frames.size() == scores.size());
  for (std::size_t f = 0; f < scores.size(); ++f) {
    INFO("frame " << f);
    CHECK(scores[f] > 0.0);
    CHECK(scores[f] == Approx(frame_sigma(direct.frames[f], calibration).sigma_f_max).epsilon(1e-9));
    // sigma_f,i of the largest atom is at least that of any one of its components, calibrated.
    double largest = 0.0;
    for (const double v : direct.frames[f].var_f)
      largest = std::max(largest, calibration.force * std::sqrt(v));
    CHECK(scores[f] >= largest * (1 - 1e-12));
  }

  // Frames shaken far from the data are less certain than the data's own frames.
  const auto far = scorer->score({dir, dumped_si8(0.3)});
  const double mean_near = std::accumulate(scores.begin(), scores.end(), 0.0) / scores.size();
  const double mean_far = std::accumulate(far.begin(), far.end(), 0.0) / far.size();
  INFO("mean score of the data's Si8 frames " << mean_near << " eV/A, shaken by 0.3 A " << mean_far);
  CHECK(mean_far > 1.5 * mean_near);
  CHECK(scorer->score({dir, ExploredFrames{}}).empty());

  // Atoms on top of each other (a run that blew up): that frame scores +inf, the others as before.
  ExploredFrames broken = dumped_si8(0.0);
  for (int d = 0; d < 3; ++d) broken.frames.coord[3 + d] = broken.frames.coord[d] + 0.03;  // frame 0, atom 1
  const auto with_broken = scorer->score({dir, broken});
  REQUIRE(with_broken.size() == scores.size());
  CHECK(std::isinf(with_broken[0]));
  for (std::size_t f = 1; f < scores.size(); ++f) CHECK(with_broken[f] == Approx(scores[f]).epsilon(1e-12));
}

TEST_CASE("the Kalman sigma scorer needs an RLEKF checkpoint and says whose",
          "[learn][select][uncertainty]") {
  const auto dir = test::make_temp_dir("kalman-scorer-adam");
  const std::string checkpoint = train("Adam", dir + "/adam");
  const auto scorer = kalman_scorer(32);
  CHECK_THROWS_AS(scorer->use_models({checkpoint}), ConfigError);
  CHECK_THROWS_WITH(scorer->use_models({checkpoint}), Catch::Matchers::Contains(checkpoint));
  SelectConfig unknown;
  unknown.method = "committee";
  CHECK_THROWS_AS(make_frame_scorer(unknown, 1), ConfigError);
}
