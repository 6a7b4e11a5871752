// Extended XYZ: properties, labels under other programs' names, grouping, and error messages.
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/ExtXyz.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::System;
using deepkf::test::make_temp_dir;
using deepkf::test::read_hdf5_systems;
using deepkf::test::require_same_system;
using deepkf::test::write_text;

TEST_CASE("extended xyz: properties, stress sign, grouping by species and pbc", "[data][extxyz]") {
  const std::string dir = make_temp_dir("xyz");
  const std::string file = dir + "/frames.xyz";
  // Frame 1 and 3: O H H periodic in a 5 x 6 x 7 box (volume 210), frame 2: H O H (other order),
  // frame 4: O H H without a Lattice (non-periodic). Extra columns (a charge, Z) are ignored.
  write_text(
      file,
      "3\n"
      "Lattice=\"5.0 0.0 0.0 0.0 6.0 0.0 0.0 0.0 7.0\" Properties=species:S:1:pos:R:3:Z:I:1:forces:R:3 "
      "energy=-10.5 stress=\"0.01 0 0 0 0.02 0 0 0 0.03\" free_energy=-10.6 pbc=\"T T T\"\n"
      "O 0.0 0.0 0.0 8 0.1 0.2 0.3\n"
      "H 0.9 0.0 0.0 1 -0.1 0.0 0.0\n"
      "H 0.0 0.9 0.0 1 0.0 -0.2 -0.3\n"
      "3\n"
      "Properties=species:S:1:pos:R:3:force:R:3 Lattice=\"5 0 0 0 6 0 0 0 7\" energy=-11\n"
      "H 1 1 1 0.5 0 0\n"
      "O 2 2 2 -0.5 0 0\n"
      "H 3 3 3 0 0 0\n"
      "\n"
      "3\n"
      "lattice=\"5.0 0.0 0.0 0.0 6.0 0.0 0.0 0.0 7.0\" Properties=species:S:1:pos:R:3:Z:I:1:forces:R:3 "
      "energy=-10.25 stress=\"0.01 0.002 0.001 0.02 0.03 0.004\"\n"
      "O 0.1 0.0 0.0 8 1 2 3\n"
      "H 1.0 0.0 0.0 1 -1 0 0\n"
      "H 0.1 0.9 0.0 1 0 -2 -3\n"
      "3\n"
      "Properties=species:S:1:pos:R:3:forces:R:3 energy=-9.0 pbc=\"F F F\"\n"
      "O 0 0 0 1 1 1\n"
      "H 1 0 0 2 2 2\n"
      "H 0 1 0 3 3 3\n");
  const auto systems = deepkf::read_extxyz(file);
  REQUIRE(systems.size() == 3);
  const System& w = systems[0];
  CHECK(w.source == file + ":O1H2");
  CHECK(w.nframes == 2);
  CHECK(w.periodic);
  CHECK(w.type_map == std::vector<std::string>{"O", "H"});
  CHECK(w.atom_types == std::vector<int>{0, 1, 1});
  CHECK(w.energy == std::vector<double>{-10.5, -10.25});
  CHECK(w.coord[3] == 0.9);
  CHECK(w.coord[9 + 0] == 0.1);
  CHECK(w.force[8] == -0.3);
  CHECK(w.force[9 + 1] == 2.0);
  REQUIRE(w.virial.size() == 18);
  // virial = -stress * V with V = 210: frame 1 is diagonal (-2.1, -4.2, -6.3); frame 2 is Voigt
  // (xx yy zz yz xz xy) = (0.01, 0.002, 0.001, 0.02, 0.03, 0.004).
  CHECK(w.virial[0] == Approx(-2.1));
  CHECK(w.virial[4] == Approx(-4.2));
  CHECK(w.virial[8] == Approx(-6.3));
  CHECK(w.virial[1] == 0.0);
  CHECK(w.virial[9 + 0] == Approx(-0.01 * 210));
  CHECK(w.virial[9 + 4] == Approx(-0.002 * 210));
  CHECK(w.virial[9 + 1] == Approx(-0.004 * 210));  // xy
  CHECK(w.virial[9 + 2] == Approx(-0.03 * 210));   // xz
  CHECK(w.virial[9 + 5] == Approx(-0.02 * 210));   // yz
  CHECK(w.virial[9 + 7] == Approx(-0.02 * 210));   // zy
  CHECK(w.box[4] == 6.0);

  const System& h = systems[1];
  CHECK(h.source == file + ":H2O1");
  CHECK(h.type_map == std::vector<std::string>{"H", "O"});
  CHECK(h.atom_types == std::vector<int>{0, 1, 0});
  CHECK(h.force[0] == 0.5);
  CHECK_FALSE(h.has_virial());

  const System& m = systems[2];
  CHECK_FALSE(m.periodic);
  CHECK(m.box.empty());
  CHECK(m.source == file + ":O1H2_nopbc_2");
  CHECK(m.energy == std::vector<double>{-9.0});

  // extxyz -> h5 -> read gives the same systems.
  deepkf::write_hdf5_systems(dir + "/frames.h5", systems,
                             {"frames/O1H2", "frames/H2O1", "frames/O1H2_nopbc"});
  const auto back = read_hdf5_systems(dir + "/frames.h5");
  REQUIRE(back.size() == 3);
  require_same_system(back[0], systems[1]);  // name order: H2O1, O1H2, O1H2_nopbc
  require_same_system(back[1], systems[0]);
  require_same_system(back[2], systems[2]);
  fs::remove_all(dir);
}

TEST_CASE("extended xyz labels under MACE's and GAP's names", "[data][extxyz]") {
  const std::string dir = make_temp_dir("xyz-names");
  const std::string file = dir + "/frames.xyz";
  // Frame 1, GAP style: dft_energy, dft_virial (eV), a dft_force column beside a model's forces column
  // of another name. Frame 2, MACE style: REF_energy, REF_stress (Voigt), REF_forces, and the model's own
  // MACE_energy / MACE_forces that must not be taken. Frame 3: both energy and REF_energy: energy wins.
  write_text(file,
             "2\n"
             "Lattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3:gap_force:R:3:dft_force:R:3 "
             "config_type=bulk dft_energy=-10.5 dft_virial=\"1 0 0 0 2 0 0 0 3\" gap_energy=-10.4\n"
             "Si 0 0 0 9 9 9 0.1 0.2 0.3\n"
             "Si 2 2 2 9 9 9 -0.1 -0.2 -0.3\n"
             "2\n"
             "Lattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3:MACE_forces:R:3:REF_forces:R:3 "
             "MACE_energy=-99 REF_energy=-11.5 REF_stress=\"0.01 0.02 0.03 0 0 0\"\n"
             "Si 0 0 0 9 9 9 1 2 3\n"
             "Si 2 2 2.1 9 9 9 -1 -2 -3\n"
             "2\n"
             "Lattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3:forces:R:3 "
             "energy=-12.5 REF_energy=-99 virial=\"0 0 0 0 0 0 0 0 0\"\n"
             "Si 0 0 0 0 0 0\n"
             "Si 2 2 2.2 0 0 0\n");
  const auto systems = deepkf::read_extxyz(file);
  REQUIRE(systems.size() == 1);
  const System& s = systems[0];
  CHECK(s.energy == std::vector<double>{-10.5, -11.5, -12.5});
  CHECK(s.force[0] == 0.1);       // dft_force, not gap_force
  CHECK(s.force[6 + 3] == -1.0);  // REF_forces, not MACE_forces
  REQUIRE(s.virial.size() == 27);
  CHECK(s.virial[4] == 2.0);                     // dft_virial as given
  CHECK(s.virial[9 + 4] == Approx(-0.02 * 64));  // -REF_stress * V
  fs::remove_all(dir);
}

TEST_CASE("extended xyz errors name the file and line", "[data][extxyz][errors]") {
  const std::string dir = make_temp_dir("xyz-bad");
  const std::string file = dir + "/bad.xyz";
  const std::string head =
      "2\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:pos:R:3:forces:R:3 energy=-1\nH 0 0 0 0 0 0\n";
  write_text(file, head + "H 1 0 0 0.1 0.2\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file),
                    Contains(file + " line 4") && Contains("6 columns") && Contains("needs 7"));
  write_text(file, head + "H 1 0 nan 0 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 4") && Contains("non-finite"));
  write_text(file, head + "H 1 0 x 0 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 4") && Contains("'x'"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:pos:R:3\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 2") && Contains("no energy"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 -5\" energy=-1\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 2") && Contains("left-handed"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1 pbc=\"T T F\"\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 2") && Contains("partial periodicity"));
  write_text(file, "2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-1\nH 0 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 4") && Contains("1 of 2 atom lines"));
  write_text(file, "two\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file), Contains(file + " line 1") && Contains("'two'"));
  write_text(file, head + "H 1 0 0 0 0 0\n2\nLattice=\"5 0 0 0 5 0 0 0 5\" energy=-2\nH 0 0 0\nH 1 0 0\n");
  CHECK_THROWS_WITH(deepkf::read_extxyz(file),
                    Contains(file) && Contains("line 5 lacks forces") && Contains("line 1"));
  fs::remove_all(dir);
}
