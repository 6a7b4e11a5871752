// The training-step factory: the input's optimizer name picks RLEKF or Adam, each reporting its own
// status and state; an unknown name is refused.
#include <torch/torch.h>

#include <regex>
#include <string>
#include <tuple>

#include "optim/Optimizers.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/train/TrainConfig.hpp"
#include "tests/optim/StepTestSupport.hpp"
#include "tests/support/Catch.hpp"

using Catch::Matchers::Contains;
using deepkf::test::model_of;
using json = nlohmann::json;

namespace {

deepkf::TrainConfig config_with(const json& optimizer) {
  json doc = json::parse(R"({
    "model": {"type_map": ["Si"], "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [8],
              "neuron": [4, 8], "axis_neuron": 2}, "fitting_net": {"neuron": [8, 8]}},
    "training": {"training_data": {"systems": ["unused"]}, "numb_steps": 10}})");
  doc["optimizer"] = optimizer;
  return deepkf::TrainConfig::from_json(doc, "step-input.json", "/");
}

}  // namespace

TEST_CASE("the training step is chosen by the input's optimizer name", "[train][step]") {
  for (const std::string name : {"LKF", "RLEKF", "lkf"}) {
    INFO(name);
    const auto cfg = config_with({{"type", name}, {"kf_blocksize", 64}});
    auto step = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
    CHECK(step->name() == "RLEKF");
    CHECK(step->status_name() == "lambda");
    CHECK(step->status_value(0) == 0.98);
    CHECK_FALSE(step->batch_errors());
    CHECK(step->covariance_bytes() > 0);
    CHECK(step->block_sizes().size() > 1);
    CHECK_THAT(step->describe(), Contains("kf_blocksize 64"));
  }
  // log_filter adds the filter's diagnostics to the display line.
  {
    const auto cfg = config_with({{"type", "RLEKF"}, {"kf_blocksize", 64}, {"log_filter", true}});
    auto step = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
    CHECK_THAT(step->status_line(0), Contains("lambda 0.98  filter: 0 updates") && Contains("tr(P)/N 1"));
    const auto plain = config_with({{"type", "RLEKF"}, {"kf_blocksize", 64}});
    CHECK(deepkf::make_training_step(plain.step(), model_of(plain), deepkf::make_serial_communicator())
              ->status_line(0) == "lambda 0.98");
  }
  const auto cfg = config_with({{"type", "Adam"}, {"learning_rate", {{"start_lr", 2e-3}}}});
  auto adam = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
  CHECK(adam->name() == "Adam");
  CHECK(adam->status_name() == "lr");
  CHECK(adam->status_value(0) == 2e-3);
  CHECK(adam->batch_errors());
  CHECK(adam->covariance_bytes() == 0);
  CHECK(adam->block_sizes().empty());
  CHECK_THROWS_AS(config_with({{"type", "SGD"}}), deepkf::ConfigError);
}

TEST_CASE("replayed frames join the energy measurement as the batch's own frames would", "[train][step]") {
  // Forces and energy_last off: a step is one energy update. Its measurement sums the batch's and the
  // replayed frames' terms, e = sqrt(B) mean |d| over all of them, so frame 0 with frames 1 and 2 replayed
  // must move the weights exactly as the batch {0, 1, 2}; and frames of two systems (8 and 16 atoms, each
  // divided by its own N) the same whichever is the batch and which the replay.
  const auto cfg = config_with({{"type", "RLEKF"},
                                {"kf_blocksize", 64},
                                {"p0", 10.0},
                                {"energy_last", false},
                                {"kf_start_pref_f", 0.0},
                                {"kf_limit_pref_f", 0.0},
                                {"energy_replay", 2}});
  // The Si8 and Si16 systems of the shipped data (the file's order is by name).
  std::vector<deepkf::System> systems;
  for (const std::int64_t natoms : {8, 16})
    for (auto& s : deepkf::read_systems(std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"))
      if (s.natoms == natoms) systems.push_back(std::move(s));
  REQUIRE(systems.size() == 2);
  const auto mc = deepkf::ModelConfig::from_json(cfg.model);
  const auto batch = [&](std::size_t s, std::vector<std::int64_t> frames) {
    return deepkf::make_batch(systems[s], frames, mc, torch::kCPU, mc.precision);
  };
  const auto flat = [](const deepkf::DeepPot& model) {
    std::vector<torch::Tensor> parts;
    for (const auto& p : model->parameters()) parts.push_back(p.detach().flatten());
    return torch::cat(parts);
  };
  const deepkf::DeepPot start = model_of(cfg);
  // The weights after one step on `local` with `replay`, from the same initial weights.
  const auto step_on = [&](std::size_t system, const deepkf::Batch& local,
                           std::vector<deepkf::Batch> replay) {
    deepkf::DeepPot model = model_of(cfg);
    {
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < model->parameters().size(); ++i)
        model->parameters()[i].copy_(start->parameters()[i]);
    }
    auto step = deepkf::make_training_step(cfg.step(), model, deepkf::make_serial_communicator());
    REQUIRE(step->replay_frames() == 2);
    deepkf::SystemInfo info;
    static_cast<deepkf::SystemAtoms&>(info) = systems[system];
    info.has_force = true;
    deepkf::StepInput in{local, info, local.coord.size(0), 0, 0};
    for (auto& b : replay) {
      in.replay_frames += b.coord.size(0);
      in.replay.push_back(std::move(b));
    }
    step->take(in);
    return flat(model);
  };
  const auto unchanged = flat(start);

  const auto replayed = step_on(0, batch(0, {0}), {batch(0, {1, 2})});
  const auto batched = step_on(0, batch(0, {0, 1, 2}), {});
  const auto alone = step_on(0, batch(0, {0}), {});
  INFO("weight change: with replay " << (replayed - unchanged).norm().item<double>() << ", as one batch "
                                     << (batched - unchanged).norm().item<double>() << ", frame 0 alone "
                                     << (alone - unchanged).norm().item<double>());
  CHECK(torch::allclose(replayed, batched, 1e-10, 1e-13));
  CHECK_FALSE(torch::allclose(replayed, alone, 1e-6, 1e-9));

  const auto a_then_b = step_on(0, batch(0, {0}), {batch(1, {0})});
  const auto b_then_a = step_on(1, batch(1, {0}), {batch(0, {0})});
  INFO(systems[0].natoms << " and " << systems[1].natoms << " atoms: difference "
                         << (a_then_b - b_then_a).norm().item<double>());
  CHECK(torch::allclose(a_then_b, b_then_a, 1e-10, 1e-13));
}

TEST_CASE("RLEKF tells where a step's time went: the filter's updates and the rest", "[train][step]") {
  // Sequential (the default): an energy update, 24 atoms in groups of 6 (4 force updates), the energy
  // again (energy_last): 6 updates; 5 without energy_last. Joint: all of them in one update, and the
  // energy again in a second with energy_last.
  for (const auto& [update, energy_last, per_step] :
       {std::tuple{"sequential", true, 6}, std::tuple{"sequential", false, 5}, std::tuple{"joint", true, 2},
        std::tuple{"joint", false, 1}}) {
    INFO("kf_update " << update << ", energy_last " << energy_last);
    const auto cfg = config_with({{"type", "RLEKF"},
                                  {"kf_blocksize", 64},
                                  {"log_filter", true},
                                  {"kf_update", update},
                                  {"energy_last", energy_last}});
    // What the settings say a step makes (the MPI benchmark's count) is what the step makes.
    CHECK(deepkf::kalman_updates_per_step(cfg.step(), false, 0) == per_step);
    const auto systems = deepkf::read_systems(std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5");
    REQUIRE_FALSE(systems.empty());
    const auto mc = deepkf::ModelConfig::from_json(cfg.model);
    const auto local = deepkf::make_batch(systems.front(), {0}, mc, torch::kCPU, mc.precision);
    auto step = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
    CHECK(step->time_summary().empty());
    deepkf::SystemInfo info;
    static_cast<deepkf::SystemAtoms&>(info) = systems.front();
    info.has_force = true;
    for (std::int64_t s = 0; s < 2; ++s) step->take(deepkf::StepInput{local, info, 1, 0, s});
    const std::string line = step->status_line(2);
    INFO(line);
    CHECK_THAT(line, Contains("filter: " + std::to_string(2 * per_step) + " updates") &&
                         Contains("  time: ") && Contains("(") &&
                         Contains("%, " + std::to_string(per_step) + " updates), model "));
    const std::string summary = step->time_summary();
    INFO(summary);
    CHECK_THAT(summary, Contains(" s per step: Kalman filter ") &&
                            Contains("%, " + std::to_string(per_step) + " updates), model "));
    // The display line covers the steps since the last display: none now.
    CHECK_THAT(step->status_line(2), !Contains("time:"));
  }
  // A virial update when a virial prefactor is set and the batch has virials; none for Adam.
  const auto virial = config_with({{"type", "RLEKF"}, {"kf_start_pref_v", 1.0}});
  CHECK(deepkf::kalman_updates_per_step(virial.step(), true, 0) == 7);
  CHECK(deepkf::kalman_updates_per_step(virial.step(), false, 0) == 6);
  CHECK(deepkf::kalman_updates_per_step(config_with({{"type", "Adam"}}).step(), true, 0) == 0);
}

namespace {

// The display line after one step of `cfg` taken as step `step` on the first frame of si_cp2k, with forces.
std::string line_after_one_step(const deepkf::TrainConfig& cfg, int step) {
  const auto systems = deepkf::read_systems(std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5");
  REQUIRE_FALSE(systems.empty());
  deepkf::SystemInfo info;
  static_cast<deepkf::SystemAtoms&>(info) = systems.front();
  info.has_force = true;
  const auto mc = deepkf::ModelConfig::from_json(cfg.model);
  const auto local = deepkf::make_batch(systems.front(), {0}, mc, torch::kCPU, mc.precision);
  auto step_ = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
  step_->take(deepkf::StepInput{local, info, 1, 0, step});
  return step_->status_line(step + 1);
}

}  // namespace

TEST_CASE("share_decay lowers every share of a joint step as s / (1 + t / T)", "[train][step]") {
  // A joint update by share gives measurement k the noise q_k (1 / s_k - 1): its share q_k / A_kk is s_k
  // exactly, and the display line shows it. With T = 1 the step that follows t = 3 steps takes a quarter.
  for (const auto& [decay, step, energy, force] :
       {std::tuple{json(1.0), 3, "10%", "5%"}, std::tuple{json(6.0), 3, "26.7%", "13.3%"},
        std::tuple{json("none"), 3, "40%", "20%"}, std::tuple{json(1.0), 0, "40%", "20%"}}) {
    INFO("share_decay " << decay << ", step " << step);
    const auto cfg = config_with({{"type", "RLEKF"},
                                  {"kf_blocksize", 64},
                                  {"log_filter", true},
                                  {"kf_update", "joint"},
                                  {"energy_share", 0.4},
                                  {"force_share", 0.2},
                                  {"share_decay", decay},
                                  {"nselect", 4},
                                  {"groupsize", 4}});
    const std::string line = line_after_one_step(cfg, step);
    INFO(line);
    CHECK_THAT(line, Contains(std::string("shares ") + energy + " " + force));
  }
}

TEST_CASE("share_rule cap takes the larger of the fixed noise and the share's", "[train][step]") {
  // The display line shows each measurement's share q_k / A_kk. With a tiny force noise (rho 1e-12) the
  // fixed share is ~100%, so the cap of 0.2 binds; with rho 1e12 it is ~0 (0% as printed) and the cap does
  // not. A cap grown to 1 (share_growth 1 at step 4: 0.2 x 5) is dropped and leaves the fixed ~100%.
  for (const auto& [update, noise, growth, step, force] :
       {std::tuple{"joint", 1e-12, json("none"), 0, "shares [0-9.]+% 20%"},
        std::tuple{"joint", 1e12, json("none"), 0, "shares [0-9.]+% 0%"},
        std::tuple{"sequential", 1e-12, json("none"), 0, "shares 20%"},
        std::tuple{"joint", 1e-12, json(1.0), 3, "shares [0-9.]+% 80%"},
        std::tuple{"joint", 1e-12, json(1.0), 4, "shares [0-9.]+% 100%"}}) {
    INFO(update << ", force_noise " << noise << ", share_growth " << growth << ", step " << step);
    const auto cfg = config_with({{"type", "RLEKF"},
                                  {"kf_blocksize", 64},
                                  {"log_filter", true},
                                  {"kf_update", update},
                                  {"force_noise", noise},
                                  {"force_share", 0.2},
                                  {"share_rule", "cap"},
                                  {"share_growth", growth},
                                  {"nselect", 4},
                                  {"groupsize", 4}});
    const std::string line = line_after_one_step(cfg, step);
    INFO(line);
    CHECK_THAT(line, Catch::Matches(".*" + std::string(force) + "( .*|$)"));
  }
}

TEST_CASE("trust_radius shortens every longer update of a step to the radius", "[train][step]") {
  // The display line's |dw| is the root mean square of the interval's steps and "damped N" counts those the
  // radius shortened. A radius of 1e-4 shortens the joint update and the sequential energy updates (their
  // force update may be shorter than it already); a radius of 1e6 binds none.
  for (const auto& [update, radius] : {std::tuple{"joint", 1e-4}, std::tuple{"sequential", 1e-4},
                                       std::tuple{"joint", 1e6}, std::tuple{"sequential", 1e6}}) {
    INFO(update << ", trust_radius " << radius);
    const auto cfg = config_with({{"type", "RLEKF"},
                                  {"kf_blocksize", 64},
                                  {"log_filter", true},
                                  {"kf_update", update},
                                  {"force_noise", "auto"},
                                  {"trust_radius", radius},
                                  {"nselect", 4},
                                  {"groupsize", 4}});
    const std::string line = line_after_one_step(cfg, 0);
    INFO(line);
    std::smatch got;
    REQUIRE(std::regex_search(
        line, got,
        std::regex(
            R"(filter: (\d+) updates, .*\|dw\| ([0-9.e+-]+),.*damped (\d+) \(free \|dw\| ([0-9.e+-]+)\))")));
    const int updates = std::stoi(got[1]), damped = std::stoi(got[3]);
    const double step = std::stod(got[2]), unbounded = std::stod(got[4]);
    CHECK(step <= radius * 1.001);  // printed to 3 digits
    if (radius < 1.0) {
      CHECK(damped >= 1);
      if (std::string(update) == "joint") CHECK(damped == updates);
      CHECK(unbounded > 100.0 * radius);
    } else {
      CHECK(damped == 0);
      CHECK(unbounded == Approx(step).epsilon(1e-2));
    }
  }
}
