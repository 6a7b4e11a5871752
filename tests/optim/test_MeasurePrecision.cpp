// RLEKF's measure_precision (docs/rlekf.md, "Measurements in float32"): which precision "auto" takes, the
// refusals, and steps measured on a float32 copy of a float64 model against the same steps measured in
// float64 through the same graph.
#include <torch/torch.h>

#include <string>
#include <tuple>

#include "optim/Optimizers.hpp"
#include "src/core/Error.hpp"
#include "src/model/Batch.hpp"
#include "tests/optim/StepTestSupport.hpp"
#include "tests/support/Catch.hpp"

using Catch::Matchers::Contains;
using deepkf::test::flat_values;
using deepkf::test::model_of;
using deepkf::test::relative_distance;
using deepkf::test::silicon_step_config;
using json = nlohmann::json;

TEST_CASE("measure_precision auto measures the joint update of a float32 covariance in float32",
          "[train][step][measure]") {
  // update, p_precision, model precision -> measured in, force gradients
  for (const auto& [update, p, model, measured, gradient] :
       {std::tuple{"joint", "float32", "float64", "float32", "graph"},
        std::tuple{"joint", "float64", "float64", "float64", "difference"},
        std::tuple{"sequential", "float32", "float64", "float64", "graph"},
        std::tuple{"joint", "float32", "float32", "float32", "graph"},
        std::tuple{"sequential", "float64", "float32", "float32", "graph"}}) {
    INFO(update << ", P in " << p << ", model in " << model);
    const auto cfg = silicon_step_config(
        {{"type", "RLEKF"}, {"kf_blocksize", 64}, {"kf_update", update}, {"p_precision", p}}, model);
    auto step = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
    CHECK(step->settings().at("measure_precision") == measured);
    CHECK(step->settings().at("force_gradient") == gradient);
    CHECK_THAT(step->describe(), Contains(std::string("measured in ") + measured));
  }
  // A restored run measures as it was trained; a checkpoint from before the key measured in the model's.
  for (const auto& [restored, measured] : {std::tuple{json::object(), "float64"},
                                           std::tuple{json{{"measure_precision", "float32"}}, "float32"}}) {
    INFO("restored settings " << restored.dump());
    auto settings = restored;
    settings["kf_update"] = "joint";
    settings["p_precision"] = "float32";
    settings["kf_blocksize"] = 64;
    deepkf::StepResources resources;
    resources.restored = settings;
    const auto cfg = silicon_step_config({{"type", "RLEKF"}});
    auto step =
        deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator(), resources);
    CHECK(step->settings().at("measure_precision") == measured);
  }
}

TEST_CASE("measure_precision refuses what it cannot do, by name", "[train][step][measure]") {
  const auto f32 = silicon_step_config({{"type", "RLEKF"}, {"measure_precision", "float64"}}, "float32");
  CHECK_THROWS_WITH(deepkf::make_training_step(f32.step(), model_of(f32), deepkf::make_serial_communicator()),
                    Contains("measure_precision \"float64\" needs a float64 model"));
  const auto diff = silicon_step_config(
      {{"type", "RLEKF"}, {"measure_precision", "float32"}, {"force_gradient", "difference"}});
  CHECK_THROWS_WITH(
      deepkf::make_training_step(diff.step(), model_of(diff), deepkf::make_serial_communicator()),
      Contains("force_gradient \"difference\" needs measurements in float64") &&
          Contains("measure_precision \"float32\""));
  CHECK_THROWS_AS(silicon_step_config({{"type", "RLEKF"}, {"measure_precision", "half"}}),
                  deepkf::ConfigError);
  CHECK_THROWS_WITH(silicon_step_config({{"type", "RLEKF"}, {"measure_precision", "half"}}),
                    Contains("measure_precision") && Contains("half") &&
                        Contains("must be \"float32\", \"float64\" or \"auto\""));
}

TEST_CASE("steps measured in float32 move a float64 model as steps measured in float64",
          "[train][step][measure]") {
  // Three steps on different frames, energy, two force groups and the virial, joint and sequential: the
  // float32 copy must follow every update of the float64 weights (within a sequential step too), so a
  // copy measured at stale weights parts from the float64 run by the whole step, not by rounding.
  const auto system = deepkf::test::silicon_cells(16);
  for (const std::string update : {"joint", "sequential"}) {
    INFO("kf_update " << update);
    std::vector<torch::Tensor> moved;
    for (const std::string precision : {"float64", "float32"}) {
      const auto cfg = silicon_step_config(deepkf::test::every_measurement({{"p_precision", "float64"},
                                                                            {"kf_update", update},
                                                                            {"measure_precision", precision},
                                                                            {"force_gradient", "graph"}}));
      auto model = model_of(cfg);
      const auto start = flat_values(model->parameters());
      auto step = deepkf::make_training_step(cfg.step(), model, deepkf::make_serial_communicator());
      CHECK_THAT(step->describe(), Contains("measured in " + precision));
      const auto mc = deepkf::ModelConfig::from_json(cfg.model);
      const auto info = deepkf::test::labelled_info(system);
      for (std::int64_t k = 0; k < 3; ++k) {
        const auto local = deepkf::make_batch(system, {k}, mc, torch::kCPU, mc.precision);
        step->take(deepkf::StepInput{local, info, 1, 0, k});
      }
      for (const auto& p : model->parameters()) REQUIRE(p.scalar_type() == torch::kFloat64);
      moved.push_back(flat_values(model->parameters()) - start);
    }
    const auto& f64 = moved[0];
    const auto& f32 = moved[1];
    INFO("|dw| " << f64.norm().item<double>() << ", relative difference " << relative_distance(f32, f64));
    CHECK(f64.norm().item<double>() > 1e-3);
    CHECK(relative_distance(f32, f64) < 1e-5);  // float32 rounding; gradients by difference in float32: 2e-3
  }
}
