// The model on the GPU against the same model on the CPU (built only when LibTorch has CUDA; the machine must
// have a GPU): energies, forces, virials and the parameter gradients RLEKF uses, to round-off.
#include <torch/torch.h>

#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"

using deepkf::DeepPot;
using deepkf::ModelOutput;
using namespace deepkf::test;

namespace {

struct Evaluated {
  ModelOutput out;
  torch::Tensor grad;  // dE/dw, all parameters concatenated
};

Evaluated evaluate_on(DeepPot& model, const Inputs& in, const torch::Device& device) {
  model->to(device);
  model->zero_grad();
  Evaluated e;
  auto options = deepkf::EvalOptions::training();
  options.atom_virial = true;
  e.out = model->evaluate(in.coord.to(device), in.atype.to(device), in.nlist.to(device), in.shift.to(device),
                          options);
  e.out.energy.sum().backward();
  std::vector<torch::Tensor> g;
  for (const auto& p : model->parameters())
    g.push_back(p.grad().defined() ? p.grad().reshape(-1).to(torch::kCPU)
                                   : torch::zeros({p.numel()}, p.options().device(torch::kCPU)));
  e.grad = torch::cat(g);
  return e;
}

}  // namespace

TEST_CASE("the model on the GPU equals the model on the CPU to round-off", "[model][cuda]") {
  REQUIRE(torch::cuda::is_available());  // a CUDA build is tested on a machine with a GPU
  const auto cell = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  const std::string descriptor =
      GENERATE(as<std::string>{}, "se_e2_a", "se_e2_r", "se_e3", "hybrid", "se_e2_a_tebd", "se_a_ebd_v2",
               "se_atten", "se_atten_v2", "se_e3_tebd", "se_e3_tebd_strip");
  INFO("descriptor " << descriptor);
  for (const auto precision : {torch::kFloat64, torch::kFloat32}) {
    for (bool one_side : {true, false}) {
      INFO("precision " << c10::toString(precision) << ", type_one_side " << one_side);
      auto model = small_model(one_side, !one_side, precision, descriptor);
      model->set_energy_bias(torch::tensor({-1.5, 0.25}, torch::kFloat64));
      const auto in = make_inputs(cell, model->config());
      const auto cpu = evaluate_on(model, in, torch::kCPU);
      const auto gpu = evaluate_on(model, in, torch::kCUDA);
      REQUIRE(gpu.out.force.device().is_cuda());
      // float64: a few ulps summed over ~100 neighbours; float32: its rounding, likewise.
      const double tol = precision == torch::kFloat64 ? 1e-11 : 2e-4;
      CHECK(relative_difference(gpu.out.energy, cpu.out.energy) < tol);
      CHECK(relative_difference(gpu.out.atom_energy, cpu.out.atom_energy) < tol);
      CHECK(relative_difference(gpu.out.force, cpu.out.force) < tol);
      CHECK(relative_difference(gpu.out.virial, cpu.out.virial) < tol);
      CHECK(relative_difference(gpu.out.atom_virial, cpu.out.atom_virial) < tol);
      CHECK(relative_difference(gpu.grad, cpu.grad) < tol);
    }
  }
}

TEST_CASE("a compressed model on the GPU equals the CPU kernel to round-off", "[model][compress][cuda]") {
  REQUIRE(torch::cuda::is_available());
  // se_e2_a and se_atten without attention layers (strip, smooth gates): the CPU kernel; se_e3_tebd in the
  // strip form: its tables by LibTorch operations on both devices
  const std::string descriptor = GENERATE(as<std::string>{}, "se_e2_a", "se_atten_v2_0", "se_e3_tebd_strip");
  const auto cell = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  for (const auto precision : {torch::kFloat64, torch::kFloat32}) {
    for (bool one_side : {true, false}) {
      INFO(descriptor << ", precision " << c10::toString(precision) << ", type_one_side " << one_side);
      auto model = small_model(one_side, true, precision, descriptor);
      deepkf::TrainingRange range(2);
      range.add({0.9, 1.0, 1.0, 1.1}, 1);
      model->set_training_range(range);
      model->compress(deepkf::TableSettings{});
      const auto in = make_inputs(cell, model->config());
      const auto cpu =
          model->evaluate(in.coord, in.atype, in.nlist, in.shift, deepkf::EvalOptions::with_atom_virial());
      model->to(torch::kCUDA);
      const auto gpu = model->evaluate(in.coord.cuda(), in.atype.cuda(), in.nlist.cuda(), in.shift.cuda(),
                                       deepkf::EvalOptions::with_atom_virial());
      REQUIRE(gpu.force.device().is_cuda());
      const double tol = precision == torch::kFloat64 ? 1e-11 : 2e-4;
      CHECK(gpu.beyond_table == cpu.beyond_table);
      CHECK(relative_difference(gpu.energy, cpu.energy) < tol);
      CHECK(relative_difference(gpu.force, cpu.force) < tol);
      CHECK(relative_difference(gpu.virial, cpu.virial) < tol);
      CHECK(relative_difference(gpu.atom_virial, cpu.atom_virial) < tol);
    }
  }
}
