// Accuracy and speed of compressed models (deepkf compress) against the uncompressed model on real water
// frames (water/data_3, frames 0..3, 192 atoms):
//  - the largest energy (per atom), force and virial (per atom) differences at table steps 0.2 .. 0.005 and
//    the observed order log2(err(h) / err(h / 2)) between successive steps (the tables' error theory: 6 for
//    energies, 5 for forces and virials);
//  - DeepPot::evaluate time per frame, uncompressed and compressed (default settings), float64 and float32,
//    median of REPEATS after two warm-up calls, in the same run; the compressed model both by the CPU
//    kernel and by LibTorch operations (set_table_kernel(false): the path of a GPU, here on the CPU).
// Models: the water reference settings (embedding 25/50/100, fitting 240/240/240, random weights, statistics
// and training range of 10 frames of data_0) and the trained test model
// tests/lammps_plugin/data/water_small.pt (no training range recorded: the 0.5 A default).
//
// usage: bench_compression [REPEATS] [THREADS]   (defaults 7 and 1; needs ../shared/datasets/water)
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "bench/support/Timing.hpp"
#include "bench/support/WaterModel.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/support/TestData.hpp"

namespace {

using deepkf::Batch;
using deepkf::DeepPot;

deepkf::ModelOutput evaluate(DeepPot& model, const Batch& b) {
  return model->evaluate(b.coord, b.atype, b.nlist, b.shift);
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// Errors at each step and the observed orders, for a model made by make().
void accuracy(const std::string& name, const std::function<DeepPot()>& make, const Batch& b) {
  auto plain = make();
  const auto ref = evaluate(plain, b);
  const double n = static_cast<double>(b.natoms);
  std::printf("\n%s: compressed minus uncompressed, largest over 4 frames\n", name.c_str());
  std::printf("%8s %14s %14s %14s %8s %8s %8s\n", "step", "energy eV/at", "force eV/A", "virial eV/at",
              "order E", "order F", "order W");
  double prev[3] = {0, 0, 0}, prev_step = 0;
  for (double step : {0.2, 0.1, 0.05, 0.02, 0.01, 0.005}) {
    auto model = make();
    deepkf::TableSettings s;
    s.step = step;
    model->compress(s);
    const auto out = evaluate(model, b);
    const double err[3] = {max_diff(out.energy, ref.energy) / n, max_diff(out.force, ref.force),
                           max_diff(out.virial, ref.virial) / n};
    std::printf("%8.3f %14.3e %14.3e %14.3e", step, err[0], err[1], err[2]);
    // observed order p: err ~ h^p between this step and the previous one
    for (int k = 0; k < 3; ++k) {
      if (prev[k] > 0) {
        std::printf(" %8.2f", std::log(prev[k] / err[k]) / std::log(prev_step / step));
      } else {
        std::printf(" %8s", "-");
      }
      prev[k] = err[k];
    }
    std::printf("\n");
    std::fflush(stdout);
    prev_step = step;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::stoi(argv[1]) : 7;
  const int threads = argc > 2 ? std::stoi(argv[2]) : 1;
  torch::set_num_threads(threads);
  const auto stats_data =
      deepkf::Dataset::load({deepkf::test::require_shared_dataset("water/data_0")}, {"O", "H"});
  const auto test_data =
      deepkf::Dataset::load({deepkf::test::require_shared_dataset("water/data_3")}, {"O", "H"});
  const auto mc = deepkf::bench::water_reference_config();
  std::vector<std::int64_t> ten(10);
  std::iota(ten.begin(), ten.end(), std::int64_t{0});
  const auto stats_batch =
      deepkf::make_batch(stats_data.systems.at(0), ten, mc, torch::kCPU, torch::kFloat64);
  const auto frames =
      deepkf::make_batch(test_data.systems.at(0), {0, 1, 2, 3}, mc, torch::kCPU, torch::kFloat64);
  std::printf("torch threads %d, repeats %d\n", threads, repeats);

  accuracy(
      "water reference settings (float64, random weights)",
      [&] { return deepkf::bench::water_reference_model(stats_batch, torch::kFloat64); }, frames);
  const std::string small = DEEPKF_SOURCE_DIR "/tests/lammps_plugin/data/water_small.pt";
  const auto small_config = deepkf::load_model(small).config;
  const auto small_frames =
      deepkf::make_batch(test_data.systems.at(0), {0, 1, 2, 3}, small_config, torch::kCPU, torch::kFloat64);
  accuracy(
      "water_small.pt (trained, embedding 8/16)", [&] { return deepkf::load_model(small).model; },
      small_frames);

  std::printf("\nDeepPot::evaluate of one 192-atom frame (energy, forces, virial), median of %d\n", repeats);
  std::printf("%8s %14s %14s %9s %14s %9s\n", "dtype", "uncompressed", "compressed", "speed-up",
              "by operations", "speed-up");
  for (const auto precision : {torch::kFloat64, torch::kFloat32}) {
    const auto one = deepkf::make_batch(test_data.systems.at(0), {0}, mc, torch::kCPU, precision);
    auto plain = deepkf::bench::water_reference_model(stats_batch, precision);
    auto compressed = deepkf::bench::water_reference_model(stats_batch, precision);
    compressed->compress(deepkf::TableSettings{});
    const double tp = deepkf::bench::time_median(repeats, [&] { evaluate(plain, one); });
    const double tc = deepkf::bench::time_median(repeats, [&] { evaluate(compressed, one); });
    compressed->set_table_kernel(false);
    const double to = deepkf::bench::time_median(repeats, [&] { evaluate(compressed, one); });
    std::printf("%8s %11.1f ms %11.1f ms %9.2f %11.1f ms %9.2f\n",
                precision == torch::kFloat64 ? "float64" : "float32", 1e3 * tp, 1e3 * tc, tp / tc, 1e3 * to,
                tp / to);
  }
  return 0;
}
