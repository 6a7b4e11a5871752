// MD throughput of pair_style deepkf (atom-steps per second) for 192-atom water and the same box replicated
// 4x4x4 (12288 atoms) at 1 and 2 MPI ranks, with the water reference settings model (se_e2_a, rcut 6,
// sel 46/92, embedding 25/50/100 type_one_side, axis 16, fitting 240/240/240, float64, random weights: the
// cost does not depend on them). The achieved FLOP/s (model FLOPs per atom-step x atom-steps/s) is compared
// with torch::mm's FLOP/s on the largest embedding layer shape, measured in the same run.
//
// usage: bench_lammps [STEPS_SMALL] [STEPS_LARGE]   (defaults 50 and 5; needs ../shared/datasets/water)
//
// FLOPs per atom-step: F_EF = 2 F_E (bench/support/ModelFlops.hpp).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>

#include "bench/support/ModelFlops.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/support/TestData.hpp"

namespace {

// FLOP/s of a float64 [rows x 50] x [50 x 100] product (the embedding net's largest layer).
double mm_flops(std::int64_t rows) {
  const auto a = torch::randn({rows, 50}, torch::kFloat64);
  const auto b = torch::randn({50, 100}, torch::kFloat64);
  auto c = torch::mm(a, b);
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = 10;
  for (int k = 0; k < reps; ++k) c = torch::mm(a, b);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * static_cast<double>(rows) * 50 * 100 * reps / s;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps_small = argc > 1 ? std::stoi(argv[1]) : 50;
  const int steps_large = argc > 2 ? std::stoi(argv[2]) : 5;
  torch::set_num_threads(1);  // the matrix-product reference runs on one thread per rank
  const auto dir = deepkf::test::make_temp_dir("bench-lammps");
  auto mc = deepkf::bench::water_reference_config();
  deepkf::DeepPot model(mc);
  deepkf::save_model(dir + "/model.pt", model, nlohmann::json{{"source", "bench_lammps (random weights)"}});
  deepkf::test::write_data_file(dir + "/data.lmp", deepkf::test::water_frame(0, false));
  const double fpas = 2 * deepkf::bench::energy_flops_per_atom(mc);  // F_EF = 2 F_E
  std::printf("model: water reference settings, random weights, float64; %.3f MFLOP per atom-step\n",
              fpas / 1e6);
  std::printf("%-8s %4s %6s %8s %14s %10s %12s %7s\n", "system", "np", "atoms", "steps", "atom-steps/s",
              "GFLOP/s", "mm GFLOP/s", "ratio");
  for (int rep : {1, 4}) {
    for (int np : {1, 2}) {
      const int steps = rep == 1 ? steps_small : steps_large;
      std::ostringstream in;
      in << "units metal\nboundary p p p\natom_style atomic\nread_data data.lmp\n";
      if (rep > 1) in << "replicate " << rep << " " << rep << " " << rep << "\n";
      in << "pair_style deepkf model.pt\npair_coeff * * O H\n"
         << "velocity all create 300 1 loop geom\nfix 1 all nve\ntimestep 0.0005\nthermo " << steps << "\n"
         << "run 1\nrun " << steps << "\n";
      const auto r = deepkf::test::run_lammps(dir, in.str(), np);
      if (r.status != 0) {
        std::fprintf(stderr, "lmp failed:\n%s\n", r.output.c_str());
        return 1;
      }
      // the last "Loop time of T on P procs for S steps with N atoms"
      const std::regex loop(R"(Loop time of ([0-9.eE+-]+) on \d+ procs for (\d+) steps with (\d+) atoms)");
      double seconds = 0, nsteps = 0, atoms = 0;
      for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), loop);
           it != std::sregex_iterator(); ++it) {
        seconds = std::stod((*it)[1]);
        nsteps = std::stod((*it)[2]);
        atoms = std::stod((*it)[3]);
      }
      const double rate = atoms * nsteps / seconds;
      const double gflops = rate * fpas / 1e9;
      const double mm = mm_flops(static_cast<std::int64_t>(atoms / np) * mc.nnei()) / 1e9;
      std::printf("%-8s %4d %6.0f %8.0f %14.1f %10.2f %12.2f %7.3f\n", rep == 1 ? "water" : "water4^3", np,
                  atoms, nsteps, rate, gflops, mm, gflops / (np * mm));
      std::fflush(stdout);
    }
  }
  return 0;
}
