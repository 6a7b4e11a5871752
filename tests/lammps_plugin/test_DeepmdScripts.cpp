// DeePMD-kit users' LAMMPS inputs: pair_style deepmd (the plugin's second name for pair_style deepkf) with
// DeePMD-kit's own water example script, unchanged, against the direct evaluation of the model. (DeePMD-kit's
// keywords that deepkf models cannot honour are among the error cases of test_PairDeepkf.cpp.)
#include <cmath>
#include <string>
#include <vector>

#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf::test;

namespace {

const std::string kScripts = std::string(DEEPKF_SOURCE_DIR) + "/tests/lammps_plugin/deepmd-kit-inputs";

}  // namespace

TEST_CASE("DeePMD-kit's water example script runs unchanged on a deepkf model", "[lammps][deepmd]") {
  // The script reads water.lmp, sets masses 16 and 2, and names the model frozen_model.pb with a bare
  // pair_coeff * * (LAMMPS type 1 = the model's first type, O; 2 = H); it then runs 1000 NVT steps.
  const auto frame = water_frame(0, false);
  const auto dir = make_temp_dir("lammps-deepmd-script");
  write_water_model(dir + "/frozen_model.pb", 11);
  write_data_file(dir + "/water.lmp", frame);
  const auto r = run_lammps(dir, read_text(kScripts + "/in.lammps"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("pair_style deepmd: frozen_model.pb: types O H") != std::string::npos);
  // thermo_style custom step pe ke etotal temp press vol, every 100 steps: step 0 is the data file's frame.
  const auto thermo = thermo_rows(read_text(dir + "/log.lammps"), 7);
  REQUIRE(thermo.size() == 11);
  CHECK(thermo.front()[0] == 0.0);
  CHECK(thermo.front()[1] == Approx(direct(dir + "/frozen_model.pb", frame).energy).epsilon(1e-8));
  CHECK(thermo.back()[0] == 1000.0);
  for (const auto& row : thermo) {
    INFO("step " << row[0]);
    CHECK(std::isfinite(row[1]));
    CHECK(row[4] > 100.0);  // an NVT run near 330 K, not a frozen or exploded one
    CHECK(row[4] < 1000.0);
  }
  CHECK(read_last_dump(dir + "/water.dump").size() == static_cast<std::size_t>(frame.natoms()));
}

TEST_CASE("pair_style deepmd with element names equals pair_style deepkf", "[lammps][deepmd]") {
  const auto frame = water_frame(0, false);
  const auto dir = make_temp_dir("lammps-deepmd-names");
  write_water_model(dir + "/model.pt", 11);
  write_data_file(dir + "/data.lmp", frame);
  const std::string run = "thermo_modify format float %.17g\nrun 0\n";
  const auto a =
      run_lammps(dir, std::string(kReadDataSetup) + "pair_style deepmd model.pt\npair_coeff * * O H\n" + run);
  const auto b =
      run_lammps(dir, std::string(kReadDataSetup) + "pair_style deepkf model.pt\npair_coeff * * O H\n" + run);
  INFO(a.output);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const auto ta = thermo_rows(a.output, 6), tb = thermo_rows(b.output, 6);  // screen and log: same rows
  REQUIRE(!ta.empty());
  REQUIRE(!tb.empty());
  CHECK(ta.front() == tb.front());
}
