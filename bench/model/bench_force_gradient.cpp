// What a force measurement's weight gradient costs on the water reference model, two ways. RLEKF measures
// y = c^T F (c: the signs of the force errors over the selected atoms, divided by 3 N g; docs/rlekf.md,
// "Measurements of one batch") and needs h_F = dy/dw beside the energy's h_E = dE/dw:
//
//   graph       what the training step does: the forces with their graph kept (EvalOptions::training, a
//               backward pass that builds a graph), then h_E and h_F by backward passes through it (h_F's a
//               double backward);
//   difference  first-order passes only: E(x) with its gradient with respect to the weights and the
//               coordinates in one backward pass (h_E and F = -dE/dx), then, since
//                 y = c^T F = -c^T dE/dx = -d/d(eps) E(x + eps c),
//               h_F = -(dE/dw(x + eps c) - dE/dw(x - eps c)) / (2 eps), the two displaced frames in one batch
//               and one backward pass of E(x + eps c) - E(x - eps c). eps is set so that the largest
//               displacement is DELTA (A).
//
// Prints each way's median time, the energy-only pass for scale, and how far the difference's h_F is from
// the graph's (relative 2-norm), for each DELTA; one frame of water/data_0, all 192 atoms in c, float64.
// Then the same model cast to float32 (the same weights rounded): the graph's h_E and h_F and their
// distance from the float64 ones, and the central difference at larger displacements.
//
// usage: bench_force_gradient [REPEATS (7)] [THREADS (2)]   (the shared water data, found as the tests find
// it)
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/support/Timing.hpp"
#include "bench/support/WaterModel.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/model/CpuMemoryCache.hpp"
#include "tests/support/TestData.hpp"

namespace {

using deepkf::bench::time_median;

torch::Tensor flat(const std::vector<torch::Tensor>& parts) {
  std::vector<torch::Tensor> f;
  for (const auto& p : parts) f.push_back(p.reshape({-1}));
  return torch::cat(f);
}

// d(output)/d(inputs), zeros for inputs the output does not depend on.
std::vector<torch::Tensor> grad(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs,
                                bool retain = false) {
  auto g = torch::autograd::grad({output}, inputs, {}, retain, false, /*allow_unused=*/true);
  for (std::size_t k = 0; k < g.size(); ++k)
    if (!g[k].defined()) g[k] = torch::zeros_like(inputs[k]);
  return g;
}

struct Gradients {
  torch::Tensor energy, force;  // h_E, h_F (flat, float64)
};

// h_E and h_F through the forces' graph, as the training step takes them.
Gradients by_graph(deepkf::DeepPot& model, const deepkf::Batch& b, const torch::Tensor& c) {
  const auto params = model->parameters();
  const auto out = model->evaluate(b.coord, b.atype, b.nlist, b.shift, deepkf::EvalOptions::training());
  Gradients g;
  g.energy = flat(grad(out.energy.sum(), params, /*retain=*/true));
  g.force = flat(grad((c * out.force).sum(), params));
  return g;
}

// h_E and the forces from one first-order pass; h_F from differences of dE/dw along c: one-sided,
// (dE/dw(x) - dE/dw(x + eps c)) / eps with dE/dw(x) from that pass, or central, each displaced frame
// evaluated on its own.
Gradients by_difference(deepkf::DeepPot& model, const deepkf::Batch& b, const torch::Tensor& c, double eps,
                        bool central) {
  const auto params = model->parameters();
  const auto x = b.coord.detach().clone().requires_grad_(true);
  auto inputs = params;
  inputs.push_back(x);
  auto first = grad(model->atomic_energy(x, b.atype, b.nlist, b.shift).sum(), inputs);
  const auto forces = -first.back();  // what the innovation needs
  (void)forces;
  first.pop_back();
  const auto energy_gradient = [&](const torch::Tensor& at) {
    return flat(grad(model->atomic_energy(at, b.atype, b.nlist, b.shift).sum(), params));
  };
  Gradients g;
  g.energy = flat(first);
  const auto plus = energy_gradient(b.coord + eps * c);
  g.force = central ? (energy_gradient(b.coord - eps * c) - plus) / (2.0 * eps) : (g.energy - plus) / eps;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::stoi(argv[1]) : 7;
  torch::set_num_threads(argc > 2 ? std::stoi(argv[2]) : 2);
  deepkf::use_cpu_memory_cache();  // as the deepkf command runs
  const auto water =
      deepkf::Dataset::load({deepkf::test::require_shared_dataset("water/data_0")}, {"O", "H"});
  auto mc = deepkf::bench::water_reference_config();
  mc.precision = torch::kFloat64;
  const auto stats = deepkf::make_batch(water.systems.at(0), {0, 1, 2, 3}, mc, torch::kCPU, torch::kFloat64);
  auto model = deepkf::bench::water_reference_model(stats, torch::kFloat64);
  const auto b = deepkf::make_batch(water.systems.at(0), {0}, mc, torch::kCPU, torch::kFloat64);
  const auto n = static_cast<double>(b.natoms);
  // Signs of a force error over every atom, as one force measurement of all atoms takes them.
  torch::manual_seed(5);
  const auto c = torch::randint(0, 2, b.coord.sizes(), b.coord.options()).mul(2).sub(1).div(3.0 * n * n);
  std::printf(
      "water reference model, %lld weights, one frame of %lld atoms, torch threads %d, median of %d\n",
      static_cast<long long>(flat(model->parameters()).numel()), static_cast<long long>(b.natoms),
      torch::get_num_threads(), repeats);

  const auto reference = by_graph(model, b, c);
  const double t_graph = time_median(repeats, [&] { by_graph(model, b, c); });
  const double t_energy = time_median(repeats, [&] {
    const auto e = model->atomic_energy(b.coord, b.atype, b.nlist, b.shift).sum();
    grad(e, model->parameters());
  });
  std::printf("energy only, forward and backward (h_E):       %8.1f ms\n", 1e3 * t_energy);
  const double t_energy_x = time_median(repeats, [&] {
    const auto x = b.coord.detach().clone().requires_grad_(true);
    auto inputs = model->parameters();
    inputs.push_back(x);
    grad(model->atomic_energy(x, b.atype, b.nlist, b.shift).sum(), inputs);
  });
  std::printf("the same with dE/dx (h_E and the forces):      %8.1f ms\n", 1e3 * t_energy_x);
  const double t_energy2 = time_median(repeats, [&] {
    const auto e = model->atomic_energy(b.coord.repeat({2, 1, 1}), b.atype.repeat({2, 1}),
                                        b.nlist.repeat({2, 1, 1}), b.shift.repeat({2, 1, 1, 1}));
    grad(e[0].sum() - e[1].sum(), model->parameters());
  });
  std::printf("energy only of two frames, forward and backward: %6.1f ms\n", 1e3 * t_energy2);
  // Batches of distinct frames: how the pass grows with the batch (LibTorch's CPU allocator decides much of
  // it: DEEPKF_CPU_MEMORY_CACHE=0 leaves glibc's malloc alone, src/model/CpuMemoryCache.hpp).
  for (const std::int64_t frames : {4, 8}) {
    if (water.systems.at(0).nframes < frames) break;
    std::vector<std::int64_t> which(static_cast<std::size_t>(frames));
    for (std::int64_t k = 0; k < frames; ++k) which[static_cast<std::size_t>(k)] = k;
    const auto many = deepkf::make_batch(water.systems.at(0), which, mc, torch::kCPU, torch::kFloat64);
    const double t = time_median(repeats, [&] {
      grad(model->atomic_energy(many.coord, many.atype, many.nlist, many.shift).sum(), model->parameters());
    });
    std::printf("energy only of %lld frames, forward and backward:  %6.1f ms\n",
                static_cast<long long>(frames), 1e3 * t);
  }
  const double t_forces = time_median(repeats, [&] { model->evaluate(b.coord, b.atype, b.nlist, b.shift); });
  std::printf("forces without graph (evaluate):               %8.1f ms\n", 1e3 * t_forces);
  std::printf("graph: forces with graph, h_E and h_F:         %8.1f ms\n", 1e3 * t_graph);
  const double cmax = c.abs().max().item<double>();
  for (const double delta : {1e-4, 1e-5, 1e-6, 1e-7}) {
    const double eps = delta / cmax;
    for (const bool central : {false, true}) {
      const auto d = by_difference(model, b, c, eps, central);
      const double t = time_median(repeats, [&] { by_difference(model, b, c, eps, central); });
      const double err_f = ((d.force - reference.force).norm() / reference.force.norm()).item<double>();
      const double err_e = ((d.energy - reference.energy).norm() / reference.energy.norm()).item<double>();
      std::printf(
          "difference (%s), largest displacement %.0e A: %8.1f ms (%.2f of graph); |dh_F|/|h_F| %.2e, "
          "|dh_E|/|h_E| %.1e\n",
          central ? "central  " : "one-sided", delta, 1e3 * t, t / t_graph, err_f, err_e);
    }
  }
  // The same weights in float32: what the measurements would cost and how far they lie from float64's.
  auto model32 = deepkf::model_in_precision(model, torch::kFloat32);
  const auto b32 = deepkf::geometry_in(b, torch::kFloat32);
  const auto c32 = c.to(torch::kFloat32);
  const auto relative = [](const torch::Tensor& a, const torch::Tensor& ref) {
    return ((a.to(torch::kFloat64) - ref).norm() / ref.norm()).item<double>();
  };
  const auto graph32 = by_graph(model32, b32, c32);
  const double t_graph32 = time_median(repeats, [&] { by_graph(model32, b32, c32); });
  std::printf(
      "float32 graph: forces with graph, h_E and h_F: %8.1f ms (%.2f of float64's); |dh_F|/|h_F| %.2e, "
      "|dh_E|/|h_E| %.1e\n",
      1e3 * t_graph32, t_graph32 / t_graph, relative(graph32.force, reference.force),
      relative(graph32.energy, reference.energy));
  // h_E from the forces' own backward pass (the weights among its inputs), h_F through the graph.
  const auto graph_energy_gradient32 = [&] {
    deepkf::EvalOptions o = deepkf::EvalOptions::training();
    o.energy_gradient = true;
    const auto out = model32->evaluate(b32.coord, b32.atype, b32.nlist, b32.shift, o);
    Gradients g;
    std::vector<torch::Tensor> e;
    for (const auto& t : out.energy_gradient) e.push_back(t.detach());
    g.energy = flat(e);
    g.force = flat(grad((c32 * out.force).sum(), model32->parameters()));
    return g;
  };
  const auto fused32 = graph_energy_gradient32();
  const double t_fused32 = time_median(repeats, graph_energy_gradient32);
  std::printf(
      "float32 graph, h_E from the forces' pass:      %8.1f ms; |dh_F|/|h_F| %.2e, |dh_E|/|h_E| %.1e\n",
      1e3 * t_fused32, relative(fused32.force, reference.force), relative(fused32.energy, reference.energy));
  const double t_energy_x32 = time_median(repeats, [&] {
    const auto x = b32.coord.detach().clone().requires_grad_(true);
    auto inputs = model32->parameters();
    inputs.push_back(x);
    grad(model32->atomic_energy(x, b32.atype, b32.nlist, b32.shift).sum(), inputs);
  });
  std::printf("float32 energy with dE/dx (h_E and the forces): %7.1f ms\n", 1e3 * t_energy_x32);
  for (const double delta : {1e-2, 1e-3, 1e-4}) {
    const double eps = delta / cmax;
    for (const bool central : {false, true}) {
      const auto d = by_difference(model32, b32, c32, eps, central);
      const double t = time_median(repeats, [&] { by_difference(model32, b32, c32, eps, central); });
      std::printf("float32 difference (%s), largest displacement %.0e A: %8.1f ms; |dh_F|/|h_F| %.2e\n",
                  central ? "central  " : "one-sided", delta, 1e3 * t, relative(d.force, reference.force));
    }
  }
  return 0;
}
