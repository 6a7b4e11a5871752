// pair_style deepkf with the descriptors beside se_e2_a (se_e2_r, se_e3, hybrid, se_e2_a with a type
// embedding, se_atten and se_e3_tebd over the neighbours of any type): run 0 against the direct
// evaluation on 1 and 2 ranks, compressed too, and the same MD trajectory on 1 and 2 ranks.
#include <string>
#include <vector>

#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/lammps_plugin/PairChecks.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf::test;

TEST_CASE("se_e2_r, se_e3, hybrid, type-embedded and se_atten models: run 0 equals the direct evaluation",
          "[lammps]") {
  SECTION("se_e2_r model, triclinic water frame, 1 rank") {
    check_run0(water_frame(1, true), 1, false, "se_e2_r");
  }
  SECTION("se_e2_r model, triclinic water frame, 2 ranks") {
    check_run0(water_frame(2, true), 2, false, "se_e2_r");
  }
  SECTION("compressed se_e2_r model, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(0, false), 2, true, "se_e2_r");
  }
  SECTION("se_e3 model, triclinic water frame, 1 rank") {
    check_run0(water_frame(1, true), 1, false, "se_e3");
  }
  SECTION("se_e3 model, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(3, false), 2, false, "se_e3");
  }
  SECTION("compressed se_e3 model, triclinic water frame, 2 ranks") {
    check_run0(water_frame(2, true), 2, true, "se_e3");
  }
  SECTION("hybrid model (se_e2_a of rcut 4, se_e2_r of rcut 6), triclinic water frame, 1 rank") {
    check_run0(water_frame(1, true), 1, false, "hybrid");
  }
  SECTION("hybrid model, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(3, false), 2, false, "hybrid");
  }
  SECTION("se_a_ebd_v2 model (se_e2_a with a type embedding), triclinic water frame, 2 ranks") {
    check_run0(water_frame(2, true), 2, false, "se_a_ebd_v2");
  }
  SECTION("compressed se_a_ebd_v2 model, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(1, false), 2, true, "se_a_ebd_v2");
  }
  SECTION("se_atten model (the nearest neighbours of any type), triclinic water frame, 1 rank") {
    check_run0(water_frame(1, true), 1, false, "se_atten");
  }
  SECTION("se_atten_v2 model, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(3, false), 2, false, "se_atten_v2");
  }
  SECTION("compressed se_atten_v2 model without attention layers, triclinic water frame, 2 ranks") {
    check_run0(water_frame(1, true), 2, true, "se_atten_v2_0");
  }
  SECTION("se_e3_tebd model, triclinic water frame, 2 ranks") {
    check_run0(water_frame(2, true), 2, false, "se_e3_tebd");
  }
  SECTION("compressed se_e3_tebd model in the strip form, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(0, false), 2, true, "se_e3_tebd_strip");
  }
}

TEST_CASE(
    "se_e2_r, se_e3, hybrid, type-embedded and se_atten models give the same 100 MD steps on 1 and 2 ranks",
    "[lammps]") {
  // se_atten in its smooth form: without the gates a neighbour crossing rcut changes the forces by a step,
  // and the two runs' rounding decides in which time step it does (1.5e-6 A apart after 100 steps)
  const std::string descriptor =
      GENERATE(as<std::string>{}, "se_e2_r", "se_e3", "hybrid", "se_a_ebd_v2", "se_atten_v2", "se_e3_tebd");
  INFO("descriptor " << descriptor);
  const auto frame = water_frame(0, false);
  std::vector<std::vector<std::vector<double>>> ends;
  for (int np : {1, 2}) {
    const auto dir = make_temp_dir("lammps-" + descriptor + "-np" + std::to_string(np));
    write_water_model(dir + "/model.pt", 11, descriptor);
    write_data_file(dir + "/data.lmp", frame);
    ends.push_back(trajectory_end(dir, np, 100));
  }
  CHECK(max_row_diff(ends[0], ends[1]) < 1e-7);
}
