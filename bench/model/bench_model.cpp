// Energy + force evaluation time of DeepPot-SE with the water reference settings on the 192-atom water
// frames, float64 and float32, batches of 1 and 4 frames, and the FLOP/s achieved against torch::mm of the
// dominant layer shapes measured in the same run. Random weights (the cost does not depend on them).
//
// usage: bench_model [DATASETS_DIR] [REPEATS] [THREADS]
//   DATASETS_DIR defaults to <source>/../shared/datasets, REPEATS (median of) to 10, THREADS (torch) to 2.
//   OpenBLAS keeps its own thread pool: OPENBLAS_NUM_THREADS=1 in the environment stops the two pools
//   from competing for the cores (see docs/benchmarks.md, model evaluation).
//
// FLOP counts: bench/support/ModelFlops.hpp.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "bench/support/ModelFlops.hpp"
#include "bench/support/Timing.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/Statistics.hpp"

using deepkf::bench::time_median;

namespace {

std::vector<double> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  char magic[10];
  in.read(magic, 10);
  const std::size_t header_len =
      static_cast<unsigned char>(magic[8]) | (static_cast<unsigned char>(magic[9]) << 8);
  std::string header(header_len, ' ');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  const bool f4 = header.find("<f4") != std::string::npos;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<double> out;
  const std::size_t w = f4 ? 4 : 8;
  for (std::size_t k = 0; k + w <= bytes.size(); k += w) {
    if (f4) {
      float v;
      std::memcpy(&v, bytes.data() + k, 4);
      out.push_back(v);
    } else {
      double v;
      std::memcpy(&v, bytes.data() + k, 8);
      out.push_back(v);
    }
  }
  return out;
}

deepkf::System read_system(const std::string& dir) {
  deepkf::System s;
  s.source = dir;
  std::ifstream tm(dir + "/type_map.raw");
  for (std::string name; tm >> name;) s.type_map.push_back(name);
  std::ifstream ty(dir + "/type.raw");
  for (int t; ty >> t;) s.atom_types.push_back(t);
  s.natoms = static_cast<std::int64_t>(s.atom_types.size());
  s.coord = read_npy(dir + "/set.000/coord.npy");
  s.box = read_npy(dir + "/set.000/box.npy");
  s.energy = read_npy(dir + "/set.000/energy.npy");
  s.nframes = static_cast<std::int64_t>(s.energy.size());
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string datasets = argc > 1 ? argv[1] : std::string(DEEPKF_SOURCE_DIR) + "/../shared/datasets";
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 10;
  const int threads = argc > 3 ? std::stoi(argv[3]) : 2;
  torch::set_num_threads(threads);
  const char* blas_threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("threads: torch %d, OPENBLAS_NUM_THREADS %s (hardware %u), median of %d runs\n",
              torch::get_num_threads(), blas_threads ? blas_threads : "unset",
              std::thread::hardware_concurrency(), repeats);

  deepkf::ModelConfig mc = deepkf::bench::water_reference_config();
  const double fe = deepkf::bench::energy_flops_per_atom(mc);
  std::printf(
      "model: water reference (type_one_side true), F_E = %.3f MFLOP/atom, F_EF = 2 F_E = %.3f MFLOP/atom\n",
      fe / 1e6, 2 * fe / 1e6);

  const auto sys = read_system(datasets + "/water/data_0");
  std::printf("%-8s %-6s %12s %14s %12s %16s %16s %8s\n", "dtype", "frames", "ms/eval", "us/atom", "GFLOP/s",
              "mm emb GFLOP/s", "mm fit GFLOP/s", "ratio");
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    mc.precision = dtype;
    deepkf::DeepPot model(mc);
    const auto stats_batch = deepkf::make_batch(sys, {0, 1, 2, 3}, mc, torch::kCPU, torch::kFloat64);
    deepkf::StatisticsSums stats(2);
    stats.add_environment(
        deepkf::environment_matrix(
            deepkf::pair_vectors(stats_batch.coord, stats_batch.nlist, stats_batch.shift, mc.rcut), mc.rcut,
            mc.rcut_smth),
        stats_batch.atype);
    const auto [davg, dstd] = stats.descriptor_statistics(mc.nnei());
    model->set_statistics(davg, dstd);
    // matrix products of the two dominant shapes: embedding 50 -> 100 over 192 x 138 slots, fitting
    // 1600 -> 240 over 192 atoms (x 4 to time a comparable amount of work)
    const auto a1 = torch::rand({192 * mc.nnei(), 50}, dtype), b1 = torch::rand({50, 100}, dtype);
    const auto a2 = torch::rand({192 * 4, 1600}, dtype), b2 = torch::rand({1600, 240}, dtype);
    const double t_mm1 = time_median(repeats, [&] { torch::mm(a1, b1); });
    const double t_mm2 = time_median(repeats, [&] { torch::mm(a2, b2); });
    const double mm1 = 2.0 * a1.size(0) * 50 * 100 / t_mm1 / 1e9;
    const double mm2 = 2.0 * a2.size(0) * 1600 * 240 / t_mm2 / 1e9;
    for (int nb : {1, 4}) {
      std::vector<std::int64_t> frames(static_cast<std::size_t>(nb));
      for (int k = 0; k < nb; ++k) frames[static_cast<std::size_t>(k)] = k;
      const auto batch = deepkf::make_batch(sys, frames, mc, torch::kCPU, torch::kFloat64);
      const double t = time_median(repeats, [&] {
        const auto out = model->evaluate(batch.coord, batch.atype, batch.nlist, batch.shift);
        (void)out;
      });
      const double atoms = static_cast<double>(nb * batch.natoms);
      const double gflops = 2 * fe * atoms / t / 1e9;
      std::printf("%-8s %-6d %12.2f %14.2f %12.2f %16.2f %16.2f %8.2f\n",
                  dtype == torch::kFloat64 ? "float64" : "float32", nb, t * 1e3, t / atoms * 1e6, gflops, mm1,
                  mm2, gflops / std::max(mm1, mm2));
    }
  }
  return 0;
}
