// The Kalman uncertainty of a model's predictions: h^T P h of each frame's energy per atom and scored force
// components against an independent computation that never differentiates with respect to the weights
// (P = L L^T from the filter's dense blocks, h^T P h = sum_j (dy/dw . l_j)^2 with each directional derivative
// from central differences of the model's energy and forces), with the force components' gradients through
// the forces' graph and by difference of energy gradients; the scored atoms; the calibration; and a
// trained run's checkpoint and model file carrying the calibration it fitted on its validation frames.
#include <torch/torch.h>  // before Catch2: glog's CHECK must not replace Catch2's

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/model/Batch.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/CheckpointCovariance.hpp"
#include "src/train/Trainer.hpp"
#include "src/uncertainty/KalmanUncertainty.hpp"
#include "src/uncertainty/UncertaintyCalibration.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using json = nlohmann::json;

namespace {

const std::string kSiData = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";

// Every frame of the project's CP2K silicon data (8, 15 and 16 atoms) under the type map "Si".
std::vector<FrameSubset> silicon_frames() { return whole(open_dataset({kSiData}, {"Si"}).systems); }

// E / N and the forces (natoms x 3) of a frame, float64.
std::pair<double, std::vector<double>> predict(DeepPot& model, const System& frame) {
  torch::NoGradGuard no_grad;
  const Batch b = make_batch(frame, {0}, model->config(), torch::kCPU, torch::kFloat64);
  auto out = model->evaluate(b.coord, b.atype, b.nlist, b.shift);
  const auto f = out.force[0].contiguous();
  return {out.energy[0].item<double>() / static_cast<double>(b.natoms),
          std::vector<double>(f.data_ptr<double>(), f.data_ptr<double>() + f.numel())};
}

// A small RLEKF input on the project's silicon data with 20% held out for validation.
json silicon_input(std::int64_t steps, const std::string& optimizer = "RLEKF") {
  json doc = json::parse(R"({
    "model": {"type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                     "axis_neuron": 2, "seed": 3},
      "fitting_net": {"neuron": [8, 8], "resnet_dt": true, "seed": 3}},
    "training": {"training_data": {"batch_size": 1}, "validation_fraction": 0.2, "calibration_frames": 4,
                 "seed": 5, "disp_freq": 1000000, "save_freq": 1000000, "num_threads": 1}
  })");
  doc["training"]["training_data"]["systems"] = {kSiData};
  doc["training"]["numb_steps"] = steps;
  doc["optimizer"] = optimizer == "Adam" ? json{{"type", "Adam"}}
                                         : json{{"type", "RLEKF"}, {"kf_blocksize", 64}, {"p0", 10.0}};
  return doc;
}

}  // namespace

TEST_CASE("h^T P h of energies and force components equals a dense P and finite differences of the model",
          "[uncertainty]") {
  DeepPot model(test::small_silicon_config(40));
  auto params = model->parameters();
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    KalmanOptions options;
    options.blocksize = 64;  // several blocks, one tensor split over two of them
    options.p0 = 0.5;
    options.p_dtype = p_dtype;
    KalmanFilter filter(params, options);
    // Some updates with random gradients, so that P is full within each block (and one update pending).
    torch::manual_seed(4);
    const auto before = filter.layout().gather(params, torch::kFloat64);
    for (int k = 0; k < 6; ++k) {
      std::vector<torch::Tensor> grads;
      for (const auto& p : params) grads.push_back(torch::randn(p.sizes(), torch::kFloat64));
      filter.update(0.0, grads);  // zero innovation: the weights stay, only P changes
    }
    REQUIRE(torch::equal(filter.layout().gather(params, torch::kFloat64), before));

    const auto sets = silicon_frames();
    const std::vector<FrameSubset> two = {FrameSubset{sets[0].source, {0}}, FrameSubset{sets[1].source, {2}}};
    UncertaintyOptions opts;
    opts.force_atoms = 2;
    opts.columns = 5;  // rows of several frames share an application of P, and a frame spans two
    opts.force_gradients = ForceGradients::kGraph;
    const auto result = score_frames(model, filter, two, opts, *make_serial_communicator());
    // The float64 model's default: force components' gradients by difference of energy gradients.
    opts.force_gradients = ForceGradients::kAuto;
    const auto by_difference = score_frames(model, filter, two, opts, *make_serial_communicator());
    REQUIRE(by_difference.frames.size() == 2);
    CHECK(by_difference.cost.backward_passes == 2 * 7);
    REQUIRE(result.frames.size() == 2);
    CHECK(result.cost.backward_passes == 2 * 7);
    CHECK(result.cost.covariance_passes == 3);

    // P = L L^T, dense over the blocks; the directions l_j (columns of L) as weight perturbations.
    const auto n = filter.layout().num_parameters();
    auto P = torch::zeros({n, n}, torch::kFloat64);
    for (std::int64_t i = 0; i < filter.layout().num_blocks(); ++i) {
      const auto& b = filter.layout().blocks()[static_cast<std::size_t>(i)];
      P.narrow(0, b.begin, b.size()).narrow(1, b.begin, b.size()).copy_(filter.covariance(i));
    }
    const auto L = torch::linalg_cholesky(P);
    const double eps = 1e-5;
    for (std::size_t k = 0; k < 2; ++k) {
      const FrameScore& s = result.frames[k];
      INFO("frame " << k);
      const System frame = two[k].read({0});
      REQUIRE(s.atoms.size() == 2);
      // q_ref[0] for E / N, q_ref[1 + 3 a + c] for component c of scored atom a
      std::vector<double> q_ref(7, 0.0);
      for (std::int64_t j = 0; j < n; ++j) {
        const auto step = eps * L.select(1, j);
        filter.layout().scatter(before + step, params);
        const auto plus = predict(model, frame);
        filter.layout().scatter(before - step, params);
        const auto minus = predict(model, frame);
        // (dy/dw . l_j) by central differences
        const auto add = [&](std::size_t slot, double yp, double ym) {
          q_ref[slot] += std::pow((yp - ym) / (2 * eps), 2);
        };
        add(0, plus.first, minus.first);
        for (std::size_t a = 0; a < 2; ++a)
          for (std::size_t c = 0; c < 3; ++c) {
            const auto at = static_cast<std::size_t>(3 * s.atoms[a]) + c;
            add(1 + 3 * a + c, plus.second[at], minus.second[at]);
          }
      }
      filter.layout().scatter(before, params);
      CHECK(s.var_e == Approx(q_ref[0]).epsilon(1e-6));
      for (std::size_t c = 0; c < 6; ++c) CHECK(s.var_f[c] == Approx(q_ref[1 + c]).epsilon(1e-6));
      // By difference: the energy's row is the same gradient; a force row is a one-sided difference with
      // the atom moved by 1e-7 A, whose error here is 2e-6 to 5e-4 of the variance (the largest on the
      // smallest variances, 1e-3 of the frame's largest), a sign or component mix-up O(1).
      const FrameScore& d = by_difference.frames[k];
      REQUIRE(d.atoms == s.atoms);
      CHECK(d.var_e == Approx(q_ref[0]).epsilon(1e-6));
      for (std::size_t c = 0; c < 6; ++c) CHECK(d.var_f[c] == Approx(q_ref[1 + c]).epsilon(1e-3));
      // The frame's actual errors against its labels.
      const auto pred = predict(model, frame);
      CHECK(s.err_e ==
            Approx(pred.first - frame.energy[0] / static_cast<double>(frame.natoms)).epsilon(1e-12));
      CHECK(s.err_f[0] == Approx(pred.second[static_cast<std::size_t>(3 * s.atoms[0])] -
                                 frame.force[static_cast<std::size_t>(3 * s.atoms[0])])
                              .epsilon(1e-12));
    }
  }
}

TEST_CASE("scored atoms: distinct, increasing, reproducible, every atom for 0", "[uncertainty]") {
  const auto a = scored_atoms(50, 8, 7, 3);
  REQUIRE(a.size() == 8);
  for (std::size_t i = 1; i < a.size(); ++i) CHECK(a[i - 1] < a[i]);
  CHECK(a.back() < 50);
  CHECK(scored_atoms(50, 8, 7, 3) == a);
  CHECK(scored_atoms(50, 8, 7, 4) != a);  // another frame, other atoms (with near certainty)
  CHECK(scored_atoms(5, 0, 7, 3) == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(scored_atoms(5, 9, 7, 3).size() == 5);
}

TEST_CASE("spread order: every prefix spread over the frames, each frame once", "[uncertainty]") {
  const auto sets = silicon_frames();
  std::vector<std::pair<const FrameSource*, std::int64_t>> all;
  for (const auto& s : sets)
    for (const auto f : s.frames) all.emplace_back(s.source.get(), f);
  const auto order = spread_order(sets);
  REQUIRE(order.size() == all.size());
  std::vector<std::size_t> positions;  // each ordered frame's position among all 31
  for (const auto& o : order) {
    REQUIRE(o.nframes() == 1);
    const auto it = std::find(all.begin(), all.end(), std::make_pair(o.source.get(), o.frames[0]));
    REQUIRE(it != all.end());
    positions.push_back(static_cast<std::size_t>(it - all.begin()));
  }
  // The first k frames leave no gap wider than 4 n / k (in frame order; the end counts as position n),
  // where the frames in their own order would leave n - k.
  const std::size_t n = all.size();
  REQUIRE(n >= 16);
  for (const std::size_t k : {2, 4, 8, 16}) {
    std::vector<std::size_t> prefix(positions.begin(), positions.begin() + static_cast<std::ptrdiff_t>(k));
    std::sort(prefix.begin(), prefix.end());
    prefix.push_back(n);
    INFO("first " << k << " of " << n);
    CHECK(prefix.front() == 0);
    for (std::size_t i = 1; i < prefix.size(); ++i) CHECK(prefix[i] - prefix[i - 1] <= 4 * n / k);
  }
  std::sort(positions.begin(), positions.end());
  for (std::size_t i = 0; i < positions.size(); ++i) CHECK(positions[i] == i);
}

TEST_CASE("scoring with a time budget stops taking frames once it is spent and min_frames are scored",
          "[uncertainty]") {
  DeepPot model(test::small_silicon_config(40));
  KalmanOptions kalman;
  kalman.blocksize = 64;
  KalmanFilter filter(model->parameters(), kalman);
  const auto order = spread_order(silicon_frames());
  UncertaintyOptions options;
  options.force_atoms = 1;
  options.time_budget = 1e-9;  // spent before the first frame is done
  options.min_frames = 3;
  const auto comm = make_serial_communicator();
  const auto result = score_frames(model, filter, order, options, *comm);
  REQUIRE(result.frames.size() == 3);
  for (std::int64_t k = 0; k < 3; ++k) {
    CHECK(result.frames[static_cast<std::size_t>(k)].system == k);  // the first three of the order
    CHECK(std::isfinite(result.frames[static_cast<std::size_t>(k)].var_e));
  }
  options.time_budget = 0.0;  // no budget: every frame
  CHECK(score_frames(model, filter, order, options, *comm).frames.size() == order.size());
}

TEST_CASE("calibration: s^2 = sum err^2 / sum h^T P h, sigma per atom and per frame", "[uncertainty]") {
  // Frame 0: var_e 1, err 3; frame 1: var_e 4, err 1 -> s_e^2 = 10 / 5. Forces of atom 0: var (1, 1, 2),
  // errors (1, 2, 3); frame 1 has no force labels.
  FrameScore a;
  a.var_e = 1.0;
  a.err_e = 3.0;
  a.atoms = {0};
  a.var_f = {1.0, 1.0, 2.0};
  a.err_f = {1.0, 2.0, 3.0};
  FrameScore b;
  b.var_e = 4.0;
  b.err_e = 1.0;
  const auto c = UncertaintyCalibration::fit({a, b}, "two frames");
  CHECK(c.energy == Approx(std::sqrt(2.0)));
  CHECK(c.force == Approx(std::sqrt(14.0 / 4.0)));
  CHECK(c.energy_samples == 2);
  CHECK(c.force_samples == 3);
  const auto back = UncertaintyCalibration::from_json(c.to_json(), "here");
  CHECK(back.energy == c.energy);
  CHECK(back.force == c.force);
  CHECK(back.fitted_on == "two frames");
  CHECK_THROWS_AS(UncertaintyCalibration::from_json(json{{"energy", -1.0}, {"force", nullptr}}, "here"),
                  ModelError);
  // sigma_f,0 = s_f sqrt(1 + 1 + 2); sigma_f_rms = s_f sqrt(4 / 3)
  const auto sigma = frame_sigma(a, c);
  CHECK(sigma.sigma_e == Approx(std::sqrt(2.0)));
  CHECK(sigma.sigma_f_max == Approx(c.force * 2.0));
  CHECK(sigma.sigma_f_mean == Approx(c.force * 2.0));
  CHECK(sigma.sigma_f_rms == Approx(c.force * std::sqrt(4.0 / 3.0)));
  // On the fitting frames the errors have the level of sigma.
  const auto [r_e, r_f] = error_to_sigma_ratio({a, b}, c);
  CHECK(r_e == Approx(1.0));
  CHECK(r_f == Approx(1.0));
  // Without a factor sigma is sqrt(h^T P h).
  CHECK(frame_sigma(b, UncertaintyCalibration{}).sigma_e == Approx(2.0));
}

TEST_CASE("frames spread evenly over several sets", "[uncertainty]") {
  const auto sets = silicon_frames();
  std::int64_t total = 0;
  for (const auto& s : sets) total += s.nframes();
  const auto picked = spread_frames(sets, 5);
  std::int64_t n = 0;
  for (const auto& s : picked) n += s.nframes();
  CHECK(n == 5);
  CHECK(picked.front().frames.front() == 0);
  CHECK(spread_frames(sets, total + 3).size() == sets.size());
}

TEST_CASE(
    "a trained run stores its calibration in the checkpoint and the model file, and the checkpoint's "
    "covariance reproduces it",
    "[uncertainty]") {
  const auto dir = test::make_temp_dir("uncertainty-train");
  TrainerOptions options;
  options.output_dir = dir;
  options.progress = 0;
  const auto comm = make_serial_communicator();
  const TrainConfig config = TrainConfig::from_json(silicon_input(6), "test-input.json", "/");
  Trainer trainer(config, options, comm);
  const auto r = trainer.run();
  auto ckpt = read_checkpoint(r.checkpoint, torch::kCPU);
  REQUIRE(ckpt.meta.contains("uncertainty_calibration"));
  const auto stored = UncertaintyCalibration::from_json(ckpt.meta["uncertainty_calibration"], "checkpoint");
  CHECK(stored.has_energy());
  CHECK(stored.has_force());
  CHECK(load_model(r.model).uncertainty_calibration == ckpt.meta["uncertainty_calibration"]);

  // The covariance read back from the file gives the same factors on the same frames.
  auto filter = checkpoint_covariance(ckpt, r.checkpoint, comm);
  const auto opened = open_dataset({kSiData}, {"Si"});
  const auto split =
      split_frames({opened.systems[0]->nframes(), opened.systems[1]->nframes(), opened.systems[2]->nframes()},
                   0.2, SplitMode::kFrame, config.seed);
  std::vector<FrameSubset> valid;
  for (const auto& part : split.validation)
    valid.push_back({opened.systems[static_cast<std::size_t>(part.system)], part.frames});
  std::int64_t nvalid = 0;
  for (const auto& v : valid) nvalid += v.nframes();
  // calibration_frames 4 (of the 7 validation frames here), as silicon_input sets it
  const std::int64_t frames = config.calibration_frames_for(6);
  REQUIRE(frames == 4);
  REQUIRE(nvalid > frames);
  CHECK(stored.energy_samples == frames);
  CHECK(stored.force_samples == frames * 8 * 3);  // 8 atoms scored per frame
  CHECK(stored.fitted_on == "4 frames of the validation data at step 6");
  const auto again = calibrate(ckpt.model, *filter, valid, frames, config.seed, "again", *comm);
  CHECK(again.energy == Approx(stored.energy).epsilon(1e-10));
  CHECK(again.force == Approx(stored.force).epsilon(1e-10));

  // Adam keeps no covariance: the Kalman uncertainty says so.
  const auto adam_dir = test::make_temp_dir("uncertainty-adam");
  options.output_dir = adam_dir;
  Trainer adam(TrainConfig::from_json(silicon_input(2, "Adam"), "test-input.json", "/"), options, comm);
  const auto ra = adam.run();
  auto adam_ckpt = read_checkpoint(ra.checkpoint, torch::kCPU);
  CHECK_FALSE(adam_ckpt.meta.contains("uncertainty_calibration"));
  CHECK_THROWS_WITH(checkpoint_covariance(adam_ckpt, ra.checkpoint, comm),
                    Catch::Matchers::Contains("holds no covariance"));
}
