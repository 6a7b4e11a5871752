// NVE molecular dynamics with models trained by deepkf: a water model kept in tests/lammps_plugin/data (see
// its README) and a silicon model trained here on ../shared/datasets/si_mlearn. Velocity Verlet with a
// smooth, trained potential conserves the total energy.
//
// A random (untrained) model is no good here: nothing keeps atoms apart, two atoms pass within 0.05 A of
// each other within 40 fs, and near r = 0 the 1/r environment matrix varies faster than any time step.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "src/core/Communicator.hpp"
#include "src/data/Dataset.hpp"
#include "src/train/Trainer.hpp"
#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf::test;
using json = nlohmann::json;

namespace {

// Two RLEKF epochs of a small se_e2_a model on si_mlearn/train (about 30 s on 2 cores; validation force
// RMSE about 0.26 eV/A). Returns the model file. Trained once per test run.
std::string train_silicon_model(const std::string& si) {
  static std::string trained;
  if (!trained.empty()) return trained;
  const auto dir = make_temp_dir("si-model");
  json doc = json::parse(R"({
    "model": {
      "type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [8, 16],
                     "axis_neuron": 4, "type_one_side": true, "seed": 3},
      "fitting_net": {"neuron": [32, 32], "resnet_dt": true, "seed": 3}
    },
    "optimizer": {"type": "LKF", "kf_blocksize": 512, "nselect": 12, "groupsize": 6, "p0": 100.0},
    "training": {"training_data": {"batch_size": 1}, "validation_data": {"batch_size": 4, "numb_btch": 1},
                 "numb_steps": 428, "seed": 5, "disp_freq": 1000000, "save_freq": 1000000}
  })");
  doc["training"]["training_data"]["systems"] = {si + "/train"};
  doc["training"]["validation_data"]["systems"] = {si + "/test"};
  deepkf::TrainerOptions options;
  options.output_dir = dir;
  options.progress = 0;
  deepkf::Trainer trainer(deepkf::TrainConfig::from_json(doc, "nve-input.json", "/"), options,
                          deepkf::make_serial_communicator());
  const auto result = trainer.run();
  INFO("validation force RMSE of the trained model: " << result.validation.rmse_f() << " eV/A");
  REQUIRE(result.validation.rmse_f() < 0.5);
  trained = result.model;
  return trained;
}

// Frame 0 of si_mlearn/train/sys_Si64 (a 64-atom cubic cell) as a LAMMPS data file.
void write_silicon_data(const std::string& si, const std::string& path) {
  const auto data = deepkf::Dataset::load({si + "/train/sys_Si64"}, {"Si"});
  REQUIRE(data.systems.size() == 1);
  const auto& sys = data.systems[0];
  const double* h = sys.box.data();
  REQUIRE((h[1] == 0 && h[2] == 0 && h[3] == 0 && h[5] == 0 && h[6] == 0 && h[7] == 0));
  deepkf::test::Frame frame;
  frame.box.assign(h, h + 9);
  frame.types.assign(static_cast<std::size_t>(sys.natoms), 0);
  for (std::int64_t i = 0; i < sys.natoms; ++i)
    for (int d = 0; d < 3; ++d) {
      // wrapped into [0, L) per axis (orthorhombic cell)
      const double L = h[4 * d];
      frame.coord.push_back(sys.coord[3 * i + d] - L * std::floor(sys.coord[3 * i + d] / L));
    }
  write_data_file(path, frame, {28.0855});
}

// Total-energy conservation of an NVE run: <KE>, the largest |Etot - Etot(0)|, and the drift (mean Etot of
// the last quarter of the thermo rows minus that of the first quarter), all in eV.
struct Conservation {
  double ke_mean = 0, spread = 0, drift = 0;
};

// NVE on 2 ranks from dir/data.lmp with `model` for `elements`, velocities at `temperature` K, thermo every
// 50 steps.
Conservation run_nve(const std::string& dir, const std::string& model, const std::string& elements,
                     int temperature, double timestep, int steps) {
  const std::string input =
      "units metal\nboundary p p p\natom_style atomic\natom_modify map yes\n"
      "read_data data.lmp\npair_style deepkf " +
      model + "\npair_coeff * * " + elements + "\nvelocity all create " + std::to_string(temperature) +
      " 1234 mom yes rot yes dist gaussian loop geom\n"
      "timestep " +
      std::to_string(timestep) +
      "\nfix 1 all nve\nthermo 50\n"
      "thermo_style custom step pe ke etotal\nthermo_modify format float %.17g\nrun " +
      std::to_string(steps) + "\n";
  const auto r = run_lammps(dir, input, 2);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto rows = thermo_rows(read_text(dir + "/log.lammps"), 4);
  REQUIRE(rows.size() == static_cast<std::size_t>(steps / 50 + 1));
  Conservation c;
  for (const auto& row : rows) {
    c.ke_mean += row[2] / static_cast<double>(rows.size());
    c.spread = std::max(c.spread, std::abs(row[3] - rows.front()[3]));
  }
  double first = 0, last = 0;
  const std::size_t q = rows.size() / 4;
  for (std::size_t k = 0; k < q; ++k) {
    first += rows[k][3] / static_cast<double>(q);
    last += rows[rows.size() - 1 - k][3] / static_cast<double>(q);
  }
  c.drift = last - first;
  return c;
}

// The compressed model conserves the total energy as well as the model it was made from: its spread and
// drift within 10% (plus 1e-5 of <KE> for round-off-sized values) of the uncompressed run's.
void check_compressed_as_good(const Conservation& plain, const Conservation& compressed) {
  INFO("compressed: max |Etot - Etot(0)| = " << compressed.spread << " eV, drift " << compressed.drift
                                             << " eV, <KE> = " << compressed.ke_mean << " eV");
  CHECK(compressed.spread < 1.1 * plain.spread + 1e-5 * plain.ke_mean);
  CHECK(std::abs(compressed.drift) < 1.1 * std::abs(plain.drift) + 1e-5 * plain.ke_mean);
  CHECK(std::abs(compressed.ke_mean - plain.ke_mean) < 0.05 * plain.ke_mean);
}

}  // namespace

TEST_CASE("NVE with a trained silicon model conserves the total energy over 2000 steps", "[lammps][nve]") {
  const std::string si = require_shared_dataset("si_mlearn");
  const auto dir = make_temp_dir("lammps-nve");
  const std::string model = train_silicon_model(si);
  write_silicon_data(si, dir + "/data.lmp");
  const Conservation c = run_nve(dir, model, "Si", 600, 0.001, 2000);
  INFO("max |Etot - Etot(0)| = " << c.spread << " eV, drift " << c.drift
                                 << " eV over 2 ps, <KE> = " << c.ke_mean << " eV");
  // 600 K for 64 atoms: <KE> = 3/2 (N - 1) kT, about 4.9 eV at the start, shared with the potential energy.
  CHECK(c.ke_mean > 2.0);
  // With 1 fs steps the total energy wanders by ~3e-4 of the kinetic energy and does not drift.
  CHECK(c.spread < 2e-3 * c.ke_mean);
  CHECK(std::abs(c.drift) < 1e-3 * c.ke_mean);
  // compressed over the training range the trainer recorded in the model file
  write_compressed_model(model, dir + "/compressed.pt");
  check_compressed_as_good(c, run_nve(dir, dir + "/compressed.pt", "Si", 600, 0.001, 2000));
}

TEST_CASE("NVE with the trained water model conserves the total energy over 1000 steps", "[lammps][nve]") {
  const auto dir = make_temp_dir("lammps-nve-water");
  write_data_file(dir + "/data.lmp", water_frame(0, false));
  const Conservation c = run_nve(dir, DEEPKF_TEST_MODELS "/water_small.pt", "O H", 330, 0.0005, 1000);
  INFO("max |Etot - Etot(0)| = " << c.spread << " eV, drift " << c.drift
                                 << " eV over 0.5 ps, <KE> = " << c.ke_mean << " eV");
  // 192 atoms at 330 K: <KE> about 8 eV.
  CHECK(c.ke_mean > 4.0);
  // 0.5 fs steps resolve the O-H vibration: the total energy wanders by ~3e-3 of the kinetic energy (the
  // velocity-Verlet shadow-energy fluctuation) and does not drift.
  CHECK(c.spread < 6e-3 * c.ke_mean);
  CHECK(std::abs(c.drift) < 1e-3 * c.ke_mean);
  // compressed (this file records no training range: the 0.5 A default)
  write_compressed_model(DEEPKF_TEST_MODELS "/water_small.pt", dir + "/compressed.pt");
  check_compressed_as_good(c, run_nve(dir, dir + "/compressed.pt", "O H", 330, 0.0005, 1000));
}

TEST_CASE("the example inputs run as shipped", "[lammps][examples]") {
  const std::string si = require_shared_dataset("si_mlearn");
  const std::string examples = DEEPKF_SOURCE_DIR "/lammps_plugin/examples";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"water_nvt.in", DEEPKF_TEST_MODELS "/water_small.pt", "192 atoms"},
      {"silicon_npt.in", train_silicon_model(si), "512 atoms"}};
  for (const auto& [script, model, atoms] : cases) {
    SECTION(script) {
      const auto dir = make_temp_dir("lammps-example");
      std::filesystem::copy_file(examples + "/water.data", dir + "/water.data");
      const auto r =
          run_lammps_script(dir, examples + "/" + script, {{"model", model}, {"plugin", DEEPKF_PLUGIN}}, 2);
      INFO(r.output);
      REQUIRE(r.status == 0);
      const std::string log = read_text(dir + "/log.lammps");
      CHECK(log.find(atoms) != std::string::npos);
      // step temp pe ... every 20 steps of 200
      const auto rows = thermo_rows(log, 6);
      REQUIRE(rows.size() == 11);
      for (const auto& row : rows) {
        CHECK(std::isfinite(row[2]));
        CHECK(row[1] > 0.0);
        CHECK(row[1] < 1000.0);  // K: thermostatted at 300 K
      }
    }
  }
}
