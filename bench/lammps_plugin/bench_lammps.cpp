// MD throughput of pair_style deepkf (atom-steps per second), uncompressed against compressed models
// (deepkf compress, default table settings), for 192-atom water and the same box replicated 4x4x4 (12,288
// atoms), at 1 and 2 MPI ranks, float64 and float32, all in one run. Model: the water reference settings
// (se_e2_a, rcut 6, sel 46/92, embedding 25/50/100 type_one_side, axis 16, fitting 240/240/240) with random
// weights (the cost does not depend on them) and the statistics, energy bias and training range of 10
// frames of water/data_0, so that the tables span the range a trained model's do.
//
// usage: bench_lammps [STEPS_SMALL] [STEPS_LARGE] [SIZES] [RANKS] [DTYPES]   (defaults 50, 5, "small,large",
// "1,2" and "float64,float32"; SIZES picks the 192-atom rows ("small"), the 12,288-atom rows ("large") or
// both; RANKS the MPI rank counts; DTYPES the model precisions; needs the shared water dataset, found as the
// tests find it: tests/support/TestData.hpp)
//
// Each rank gets cores / R torch threads (OMP_NUM_THREADS), unless OMP_NUM_THREADS is set already, so that
// R ranks share the machine's cores instead of each taking all of them.
//
// DEEPKF_BENCH_DESCRIPTOR=se_e2_r measures DeePMD-kit's se_e2_r water example instead (examples/water/
// se_e2_r: embedding 5/10/20 type_one_side, fitting 120/120/120, the same rcut and sel); its compressed
// model evaluates its tables by LibTorch operations (docs/compression.md), and no GFLOP/s is printed.
// DEEPKF_BENCH_DESCRIPTOR=se_e3 measures DeePMD-kit's se_e3 water example (examples/water/se_e3: rcut 5.8,
// embedding 2/4/8, fitting 240/240/240, sel "auto", which gives 40/76 on the water data; compressed: the
// three-body kernel), and
// DEEPKF_BENCH_DESCRIPTOR=hybrid its hybrid example (se_e2_a of rcut 4, sel 20/40, embedding 10/20/40, axis
// 4, beside se_e2_r of rcut 6, sel 46/92, embedding 5/10/20; fitting 240/240/240), uncompressed only;
// DEEPKF_BENCH_DESCRIPTOR=se_a_ebd_v2 its se_e2_a_tebd example (the reference settings with a type embedding
// 2/4/8 in the strip form; compressed: G(s)'s table by LibTorch operations); DEEPKF_BENCH_DESCRIPTOR=se_atten
// its se_atten example (se_atten_v2: sel 120 of any type, embedding 25/50/100, axis 16, tebd_dim 8 strip,
// two attention layers of width 128, fitting 240/240/240), uncompressed only, and se_atten0 its
// se_atten_compressible example (the same without attention layers; compressed: the tables' kernel);
// DEEPKF_BENCH_DESCRIPTOR=se_e3_tebd its se_e3_tebd example (rcut 4, sel 40 of any type, embedding 2/4/8,
// tebd_dim 8 concat, fitting 240/240/240), uncompressed only, and se_e3_tebd_strip the same in the strip
// form (compressed: the three-body kernel).
//
// For the uncompressed model the achieved GFLOP/s (5.708 MFLOP per atom-step, bench/support/ModelFlops.hpp,
// times atom-steps/s) is printed as before; "speed-up" is compressed over uncompressed atom-steps/s of the
// same system, ranks and precision, measured in this run.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/support/WaterModel.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/support/TestData.hpp"

namespace {

// The reference-settings model in `precision` with the statistics, bias and training range of `b`, written
// uncompressed to `plain` and compressed (default settings) to `compressed`.
void write_models(deepkf::ModelConfig mc, const deepkf::Batch& b, c10::ScalarType precision,
                  const std::string& plain, const std::string& compressed) {
  mc.precision = precision;
  for (auto& part : mc.parts) part.precision = precision;  // a hybrid's parts share it
  auto model = deepkf::test::model_with_data_statistics(mc, b);
  const nlohmann::json provenance{{"source", "bench_lammps (random weights, statistics of water/data_0)"}};
  deepkf::save_model(plain, model, provenance);
  if (!mc.compression_refusal().empty()) return;  // not compressed
  model->compress(deepkf::TableSettings{});
  deepkf::save_model(compressed, model, provenance);
}

// atom-steps per second of the last "Loop time of T on P procs for S steps with N atoms" of a run.
double throughput(const std::string& output) {
  const std::regex loop(R"(Loop time of ([0-9.eE+-]+) on \d+ procs for (\d+) steps with (\d+) atoms)");
  double seconds = 0, nsteps = 0, atoms = 0;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), loop); it != std::sregex_iterator();
       ++it) {
    seconds = std::stod((*it)[1]);
    nsteps = std::stod((*it)[2]);
    atoms = std::stod((*it)[3]);
  }
  return seconds > 0 ? atoms * nsteps / seconds : 0.0;
}

// The comma-separated items of `list`.
std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

// The water model of DEEPKF_BENCH_DESCRIPTOR's name `chosen` in DeePMD-kit's example settings for it (the
// reference settings for se_e2_a); false for a name the benchmark does not know.
bool set_descriptor(const std::string& chosen, deepkf::ModelConfig& mc) {
  if (chosen == "se_e3_tebd" || chosen == "se_e3_tebd_strip") {
    mc.descriptor = "se_e3_tebd";
    if (chosen == "se_e3_tebd_strip") mc.tebd_input_mode = "strip";
    mc.rcut = 4.0;
    mc.sel = {40};
    mc.embedding_neuron = {2, 4, 8};
    mc.type_one_side = false;
    mc.type_embedding.neuron = {8};
    mc.type_embedding.linear = true;
    mc.attention.layers = 0;
    mc.attention.smooth = true;
  } else if (chosen == "se_atten" || chosen == "se_atten0") {
    mc.descriptor = "se_atten";
    mc.sel = {120};
    mc.type_one_side = false;
    mc.type_embedding.neuron = {8};
    mc.type_embedding.linear = true;
    mc.tebd_input_mode = "strip";
    mc.attention.smooth = true;
    mc.attention.set_davg_zero = false;
    mc.attention.layers = chosen == "se_atten" ? 2 : 0;
  } else if (chosen == "se_a_ebd_v2") {
    mc.type_embedding.neuron = {2, 4, 8};
    mc.tebd_input_mode = "strip";
    mc.type_one_side = true;
  } else if (chosen == "se_e2_r") {
    mc.descriptor = "se_e2_r";
    mc.embedding_neuron = {5, 10, 20};
    mc.type_one_side = true;
    mc.fitting_neuron = {120, 120, 120};
  } else if (chosen == "se_e3") {
    mc.descriptor = "se_e3";
    mc.rcut = 5.8;
    mc.sel = {40, 76};
    mc.embedding_neuron = {2, 4, 8};
    mc.type_one_side = false;
    mc.fitting_neuron = {240, 240, 240};
  } else if (chosen == "hybrid") {
    deepkf::ModelConfig a = mc, r = mc;
    a.rcut = 4.0;
    a.sel = {20, 40};
    a.embedding_neuron = {10, 20, 40};
    a.axis_neuron = 4;
    a.type_one_side = true;
    r.descriptor = "se_e2_r";
    r.embedding_neuron = {5, 10, 20};
    r.type_one_side = true;
    mc.descriptor = "hybrid";
    mc.parts = {a, r};
    mc.combine_parts();
  } else if (chosen != "se_e2_a") {
    return false;
  }
  return true;
}

// The LAMMPS input: the water frame (replicated rep x rep x rep) run with `model` for one step, then for
// `steps` timed NVE steps.
std::string lammps_input(const std::string& model, int rep, int steps) {
  std::ostringstream in;
  in << "units metal\nboundary p p p\natom_style atomic\nread_data data.lmp\n";
  if (rep > 1) in << "replicate " << rep << " " << rep << " " << rep << "\n";
  in << "pair_style deepkf " << model << "\npair_coeff * * O H\n"
     << "velocity all create 300 1 loop geom\nfix 1 all nve\ntimestep 0.0005\nthermo " << steps << "\n"
     << "run 1\nrun " << steps << "\n";
  return in.str();
}

// Runs `steps` MD steps of the water box replicated rep^3 times on `np` ranks with the `dtype` model,
// uncompressed and (where the model allows it) compressed, and prints a row for each; false when LAMMPS
// fails (its output goes to stderr). `fpas`: FLOP per atom-step of the uncompressed model (0: unknown).
bool measure(const std::string& dir, const deepkf::ModelConfig& mc, int rep, int np, const std::string& dtype,
             int steps, double fpas) {
  double plain_rate = 0;
  for (const bool compressed : {false, true}) {
    if (compressed && !mc.compression_refusal().empty()) continue;  // as write_models
    const std::string model = dtype + (compressed ? "-compressed.pt" : ".pt");
    const auto r = deepkf::test::run_lammps(dir, lammps_input(model, rep, steps), np);
    if (r.status != 0) {
      std::fprintf(stderr, "lmp failed:\n%s\n", r.output.c_str());
      return false;
    }
    const double rate = throughput(r.output);
    if (!compressed) plain_rate = rate;
    char gflops[32] = "-", speedup[32] = "1";
    if (compressed) {
      std::snprintf(speedup, sizeof speedup, "%.2f", rate / plain_rate);
    } else if (fpas > 0) {
      std::snprintf(gflops, sizeof gflops, "%.2f", rate * fpas / 1e9);
    }
    std::printf("%-9s %3d %6d %8s %12s %6d %14.1f %9s %9s\n", rep == 1 ? "water" : "water4^3", np,
                192 * rep * rep * rep, dtype.c_str(), compressed ? "compressed" : "uncompressed", steps, rate,
                gflops, speedup);
    std::fflush(stdout);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps_small = argc > 1 ? std::stoi(argv[1]) : 50;
  const int steps_large = argc > 2 ? std::stoi(argv[2]) : 5;
  const std::string sizes = argc > 3 ? argv[3] : "small,large";
  std::vector<int> ranks;
  for (const auto& r : split(argc > 4 ? argv[4] : "1,2")) ranks.push_back(std::stoi(r));
  const auto dtypes = split(argc > 5 ? argv[5] : "float64,float32");
  const bool threads_given = std::getenv("OMP_NUM_THREADS") != nullptr;
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<int> reps;
  if (sizes.find("small") != std::string::npos) reps.push_back(1);
  if (sizes.find("large") != std::string::npos) reps.push_back(4);
  if (reps.empty()) {
    std::fprintf(stderr, "bench_lammps: SIZES must name small, large or both, not '%s'\n", sizes.c_str());
    return 2;
  }
  const auto dir = deepkf::test::make_temp_dir("bench-lammps");
  const auto water =
      deepkf::Dataset::load({deepkf::test::require_shared_dataset("water/data_0")}, {"O", "H"});
  std::vector<std::int64_t> frames(10);
  std::iota(frames.begin(), frames.end(), std::int64_t{0});
  auto mc = deepkf::bench::water_reference_config();
  const char* descriptor = std::getenv("DEEPKF_BENCH_DESCRIPTOR");
  const std::string chosen = descriptor == nullptr ? "se_e2_a" : descriptor;
  if (!set_descriptor(chosen, mc)) {
    std::fprintf(
        stderr,
        "bench_lammps: DEEPKF_BENCH_DESCRIPTOR must be se_e2_a, se_e2_r, se_e3, hybrid, se_a_ebd_v2, "
        "se_atten, se_atten0, se_e3_tebd or se_e3_tebd_strip, not '%s'\n",
        chosen.c_str());
    return 2;
  }
  const auto batch = deepkf::make_batch(water.systems.at(0), frames, mc, torch::kCPU, torch::kFloat64);
  const std::map<std::string, c10::ScalarType> precisions = {{"float64", torch::kFloat64},
                                                             {"float32", torch::kFloat32}};
  for (const auto& dtype : dtypes) {
    if (precisions.count(dtype) == 0) {
      std::fprintf(stderr, "bench_lammps: DTYPES must name float64, float32 or both, not '%s'\n",
                   dtype.c_str());
      return 2;
    }
  }
  for (const auto& [name, precision] : precisions)
    write_models(mc, batch, precision, dir + "/" + name + ".pt", dir + "/" + name + "-compressed.pt");
  deepkf::test::write_data_file(dir + "/data.lmp", deepkf::test::water_frame(0, false));
  const bool se_a = chosen == "se_e2_a";
  const double fpas = se_a ? 2 * deepkf::bench::energy_flops_per_atom(mc) : 0.0;  // F_EF = 2 F_E
  if (!se_a) {
    std::printf(
        "model: DeePMD-kit's %s water example settings, random weights, statistics and training range "
        "of 10 frames of water/data_0\n",
        chosen.c_str());
  } else {
    std::printf(
        "model: water reference settings, random weights, statistics and training range of 10 frames of "
        "water/data_0; uncompressed %.3f MFLOP per atom-step\n",
        fpas / 1e6);
  }
  std::printf("%-9s %3s %6s %8s %12s %6s %14s %9s %9s\n", "system", "np", "atoms", "dtype", "model", "steps",
              "atom-steps/s", "GFLOP/s", "speed-up");
  for (int rep : reps) {
    for (int np : ranks) {
      if (!threads_given) setenv("OMP_NUM_THREADS", std::to_string(std::max(1, cores / np)).c_str(), 1);
      for (const auto& dtype : dtypes) {
        const int steps = rep == 1 ? steps_small : steps_large;
        if (!measure(dir, mc, rep, np, dtype, steps, fpas)) return 1;
      }
    }
  }
  return 0;
}
