// Force and virial gradients by difference (optim/DifferenceGradients.hpp, RLEKF's force_gradient
// "difference") against the gradients through the forces' graph, and RLEKF steps taken either way.
#include <torch/torch.h>

#include <string>
#include <tuple>

#include "optim/DifferenceGradients.hpp"
#include "optim/KalmanMeasurement.hpp"
#include "optim/Optimizers.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/train/TrainConfig.hpp"
#include "tests/optim/StepTestSupport.hpp"
#include "tests/support/Catch.hpp"

using Catch::Matchers::Contains;
using deepkf::test::flat_values;
using deepkf::test::model_of;
using deepkf::test::relative_distance;
using deepkf::test::silicon_cells;
using deepkf::test::silicon_step_config;
using json = nlohmann::json;

namespace {

std::vector<torch::Tensor> graph_gradient(const torch::Tensor& y, const std::vector<torch::Tensor>& params) {
  auto g = torch::autograd::grad({y}, params, {}, /*retain_graph=*/true, false, /*allow_unused=*/true);
  for (std::size_t k = 0; k < g.size(); ++k)
    if (!g[k].defined()) g[k] = torch::zeros_like(params[k]);
  return g;
}

}  // namespace

TEST_CASE("force and virial gradients by difference equal the gradients through the forces' graph",
          "[train][step][difference]") {
  const auto cfg = silicon_step_config({{"type", "RLEKF"}});
  auto model = model_of(cfg);
  const auto mc = deepkf::ModelConfig::from_json(cfg.model);
  const auto system = silicon_cells(16);
  REQUIRE(system.has_virial());
  const auto b = deepkf::make_batch(system, {0, 1}, mc, torch::kCPU, torch::kFloat64);
  const auto params = model->trainable_parameters();
  const auto natoms = torch::full({2}, 16.0, torch::kFloat64);
  torch::manual_seed(3);
  const auto atoms = torch::randint(0, 16, {2, 5}, torch::kInt64);  // a force group of 5 atoms per frame
  const auto idx = atoms.unsqueeze(-1).expand({-1, -1, 3});

  const auto graph = model->evaluate(b.coord, b.atype, b.nlist, b.shift, deepkf::EvalOptions::training());
  const auto plain =
      model->evaluate(b.coord, b.atype, b.nlist, b.shift, deepkf::EvalOptions::with_energy_gradient());
  // The forces' own backward pass gives d(sum E)/dw as a pass of the energy alone does, and the same forces.
  const auto energy = model->atomic_energy(b.coord, b.atype, b.nlist, b.shift).sum();
  CHECK(relative_distance(flat_values(plain.energy_gradient), flat_values(graph_gradient(energy, params))) <
        1e-12);
  CHECK(relative_distance(plain.force, graph.force.detach()) < 1e-12);
  CHECK(relative_distance(plain.virial, graph.virial.detach()) < 1e-12);
  // With the forces' graph kept (the joint step through the graph), the same energy gradient, detached.
  deepkf::EvalOptions kept_options = deepkf::EvalOptions::training();
  kept_options.energy_gradient = true;
  const auto kept = model->evaluate(b.coord, b.atype, b.nlist, b.shift, kept_options);
  CHECK(relative_distance(flat_values(kept.energy_gradient), flat_values(graph_gradient(energy, params))) <
        1e-12);
  for (const auto& g : kept.energy_gradient) CHECK_FALSE(g.requires_grad());
  CHECK(kept.force.requires_grad());

  const auto pf = 1.7;  // any prefactor: the measurement's scale sets the step
  const auto fg = deepkf::force_measurement(graph.force.gather(1, idx), b.force.gather(1, idx), natoms, pf);
  const auto fp = deepkf::force_measurement(plain.force.gather(1, idx), b.force.gather(1, idx), natoms, pf);
  const auto h_force = flat_values(
      deepkf::force_gradient_by_difference(model, b, params, plain.energy_gradient, atoms, fp.weights));
  const auto h_force_graph = flat_values(graph_gradient(fg.y, params));
  INFO("force: |h| " << h_force_graph.norm().item<double>() << ", relative difference "
                     << relative_distance(h_force, h_force_graph));
  CHECK(relative_distance(h_force, h_force_graph) < 1e-4);

  const auto vg = deepkf::virial_measurement(graph.virial, b.virial, natoms, 0.3);
  const auto vp = deepkf::virial_measurement(plain.virial, b.virial, natoms, 0.3);
  const auto h_virial =
      flat_values(deepkf::virial_gradient_by_difference(model, b, params, plain.energy_gradient, vp.weights));
  const auto h_virial_graph = flat_values(graph_gradient(vg.y, params));
  INFO("virial: |h| " << h_virial_graph.norm().item<double>() << ", relative difference "
                      << relative_distance(h_virial, h_virial_graph));
  CHECK(relative_distance(h_virial, h_virial_graph) < 1e-4);
}

TEST_CASE("an RLEKF step with force gradients by difference moves the weights as through the graph",
          "[train][step][difference]") {
  // Energy, force groups and the virial; one frame (the energy's gradient from the forces' pass) and two
  // (its own graph); joint and sequential. The weight changes agree to the differences' error.
  const auto system = silicon_cells(16);
  for (const auto& [update, frames] :
       {std::tuple{"joint", 1}, std::tuple{"joint", 2}, std::tuple{"sequential", 2}}) {
    INFO("kf_update " << update << ", " << frames << " frames");
    std::vector<torch::Tensor> after;
    torch::Tensor start;
    for (const std::string how : {"graph", "difference"}) {
      const auto cfg = silicon_step_config(
          deepkf::test::every_measurement({{"kf_update", update}, {"force_gradient", how}}));
      auto model = model_of(cfg);
      start = flat_values(model->parameters());
      auto step = deepkf::make_training_step(cfg.step(), model, deepkf::make_serial_communicator());
      CHECK(step->settings().at("force_gradient") == how);
      CHECK_THAT(step->describe(), Contains(how == "graph" ? "force gradients through the graph"
                                                           : "force gradients by difference"));
      const auto mc = deepkf::ModelConfig::from_json(cfg.model);
      std::vector<std::int64_t> which(static_cast<std::size_t>(frames));
      for (int k = 0; k < frames; ++k) which[static_cast<std::size_t>(k)] = k;
      const auto local = deepkf::make_batch(system, which, mc, torch::kCPU, mc.precision);
      const auto info = deepkf::test::labelled_info(system);
      step->take(deepkf::StepInput{local, info, frames, 0, 0});
      after.push_back(flat_values(model->parameters()));
    }
    const auto graph = after[0] - start, difference = after[1] - start;
    INFO("|dw| " << graph.norm().item<double>() << ", relative difference "
                 << relative_distance(difference, graph));
    CHECK(graph.norm().item<double>() > 0.0);
    CHECK(relative_distance(difference, graph) < 1e-3);
  }
}

TEST_CASE("force_gradient auto takes differences for the joint update of a float64 model",
          "[train][step][difference]") {
  for (const auto& [update, precision, expected] :
       {std::tuple{"joint", "float64", "difference"}, std::tuple{"sequential", "float64", "graph"},
        std::tuple{"joint", "float32", "graph"}}) {
    INFO(update << ", " << precision);
    const auto cfg =
        silicon_step_config({{"type", "RLEKF"}, {"kf_blocksize", 64}, {"kf_update", update}}, precision);
    auto step = deepkf::make_training_step(cfg.step(), model_of(cfg), deepkf::make_serial_communicator());
    CHECK(step->settings().at("force_gradient") == expected);
  }
  // Differences in float32 lose too many digits: refused by name.
  const auto f32 = silicon_step_config({{"type", "RLEKF"}, {"force_gradient", "difference"}}, "float32");
  CHECK_THROWS_WITH(deepkf::make_training_step(f32.step(), model_of(f32), deepkf::make_serial_communicator()),
                    Contains("force_gradient \"difference\" needs measurements in float64"));
  try {
    silicon_step_config({{"type", "RLEKF"}, {"force_gradient", "finite"}});
    FAIL("force_gradient \"finite\" was accepted");
  } catch (const deepkf::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Contains("force_gradient") && Contains("finite") &&
                                          Contains("must be \"graph\", \"difference\" or \"auto\""));
  }
}
