// The training-step factory: the input's optimizer name picks RLEKF or Adam, each reporting its own
// status and state; an unknown name is refused.
#include <torch/torch.h>

#include "src/core/Error.hpp"
#include "src/train/Optimizers.hpp"
#include "tests/support/Catch.hpp"

using Catch::Matchers::Contains;
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

deepkf::DeepPot model_of(const deepkf::TrainConfig& cfg) {
  auto mc = deepkf::ModelConfig::from_json(cfg.model);
  mc.validate();
  return deepkf::DeepPot(mc);
}

}  // namespace

TEST_CASE("the training step is chosen by the input's optimizer name", "[train][step]") {
  for (const std::string name : {"LKF", "RLEKF", "lkf"}) {
    INFO(name);
    const auto cfg = config_with({{"type", name}, {"kf_blocksize", 64}});
    auto step = deepkf::make_training_step(cfg, model_of(cfg), deepkf::make_serial_communicator());
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
    auto step = deepkf::make_training_step(cfg, model_of(cfg), deepkf::make_serial_communicator());
    CHECK_THAT(step->status_line(0), Contains("lambda 0.98  filter: 0 updates") && Contains("tr(P)/N 1"));
    const auto plain = config_with({{"type", "RLEKF"}, {"kf_blocksize", 64}});
    CHECK(deepkf::make_training_step(plain, model_of(plain), deepkf::make_serial_communicator())
              ->status_line(0) == "lambda 0.98");
  }
  const auto cfg = config_with({{"type", "Adam"}, {"learning_rate", {{"start_lr", 2e-3}}}});
  auto adam = deepkf::make_training_step(cfg, model_of(cfg), deepkf::make_serial_communicator());
  CHECK(adam->name() == "Adam");
  CHECK(adam->status_name() == "lr");
  CHECK(adam->status_value(0) == 2e-3);
  CHECK(adam->batch_errors());
  CHECK(adam->covariance_bytes() == 0);
  CHECK(adam->block_sizes().empty());
  CHECK_THROWS_AS(config_with({{"type", "SGD"}}), deepkf::ConfigError);
}
