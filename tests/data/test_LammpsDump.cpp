// The LAMMPS text dump reader on hand-written snapshots whose cells and positions are worked out here from
// LAMMPS's definitions: orthogonal and tilted boxes, scaled coordinates, atoms out of id order, several
// timesteps and systems, and one error per malformed input. (A dump written by the real LAMMPS is read in
// tests/lammps_plugin/test_LammpsDump.cpp.)
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/data/LammpsDump.hpp"
#include "tests/data/DataTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using Catch::Matchers::Contains;
using deepkf::DataError;
using deepkf::read_lammps_dump;
using deepkf::test::make_temp_dir;
using deepkf::test::write_text;

namespace {

std::string dump_file(const std::string& text) {
  const std::string path = make_temp_dir("lammps-dump") + "/md.dump";
  write_text(path, text);
  return path;
}

// One snapshot of `atoms` lines under the given box item and bounds.
std::string snapshot(long step, const std::string& box, const std::string& bounds, const std::string& columns,
                     const std::vector<std::string>& atoms) {
  std::string s = "ITEM: TIMESTEP\n" + std::to_string(step) + "\nITEM: NUMBER OF ATOMS\n" +
                  std::to_string(atoms.size()) + "\nITEM: BOX BOUNDS " + box + "\n" + bounds +
                  "ITEM: ATOMS " + columns + "\n";
  for (const auto& a : atoms) s += a + "\n";
  return s;
}

const std::string kOrthoBounds = "0.0 10.0\n-1.0 9.0\n2.0 14.0\n";

}  // namespace

TEST_CASE("an orthogonal dump: atoms in id order, elements from the type map, cell and origin",
          "[data][lammps_dump]") {
  const auto path = dump_file(snapshot(100, "pp pp pp", kOrthoBounds, "id type x y z",
                                       {"3 2 1.0 2.0 3.0", "1 1 4.0 5.0 6.0", "2 2 7.0 8.0 9.5"}));
  CHECK(deepkf::is_lammps_dump(path));
  const auto dump = read_lammps_dump(path, {"O", "H"});
  REQUIRE(dump.systems.size() == 1);
  const auto& s = dump.systems[0];
  CHECK(s.source == path);
  CHECK(s.nframes == 1);
  CHECK(s.natoms == 3);
  CHECK(s.periodic);
  // id order: 1 (O), 2 (H), 3 (H)
  CHECK(s.type_map == std::vector<std::string>{"O", "H"});
  CHECK(s.atom_types == std::vector<int>{0, 1, 1});
  CHECK(s.coord == std::vector<double>{4, 5, 6, 7, 8, 9.5, 1, 2, 3});
  CHECK(s.box == std::vector<double>{10, 0, 0, 0, 10, 0, 0, 0, 12});
  CHECK(s.energy.empty());
  CHECK(s.force.empty());
  CHECK(dump.timesteps == std::vector<std::vector<std::int64_t>>{{100}});
}

TEST_CASE("a triclinic dump: the bounding box and tilts give the cell, and scaled coordinates use it",
          "[data][lammps_dump]") {
  // Cell a = (10, 0, 0), b = (2, 8, 0), c = (-1, 1.5, 9) at origin (0.5, -1, 2): xy 2, xz -1, yz 1.5.
  // LAMMPS writes xlo_bound = xlo + min(0, xy, xz, xy + xz) = 0.5 - 1, xhi_bound = xhi + max(...) = 10.5 + 2,
  // ylo_bound = ylo + min(0, yz) = -1, yhi_bound = yhi + max(0, yz) = 7 + 1.5.
  const std::string bounds = "-0.5 12.5 2.0\n-1.0 8.5 -1.0\n2.0 11.0 1.5\n";
  // Fractional (0.5, 0.25, 0.5): x = origin + 0.5 a + 0.25 b + 0.5 c = (0.5 + 5 + 0.5 - 0.5, -1 + 2 + 0.75, 2
  // + 4.5)
  const auto path = dump_file(snapshot(0, "xy xz yz pp pp pp", bounds, "id element xs ys zs",
                                       {"1 Cu 0.5 0.25 0.5", "2 Cu 0.0 0.0 0.0"}));
  const auto dump = read_lammps_dump(path, {});
  const auto& s = dump.systems[0];
  CHECK(s.type_map == std::vector<std::string>{"Cu"});
  CHECK(s.box == std::vector<double>{10, 0, 0, 2, 8, 0, -1, 1.5, 9});
  REQUIRE(s.coord.size() == 6);
  CHECK(s.coord[0] == Approx(5.5));
  CHECK(s.coord[1] == Approx(1.75));
  CHECK(s.coord[2] == Approx(6.5));
  CHECK(s.coord[3] == Approx(0.5));
  CHECK(s.coord[4] == Approx(-1.0));
  CHECK(s.coord[5] == Approx(2.0));
}

TEST_CASE("several timesteps: snapshots with the same atoms form one system, others their own",
          "[data][lammps_dump]") {
  const std::string text =
      snapshot(0, "pp pp pp", kOrthoBounds, "id type xu yu zu", {"1 1 1 1 1", "2 2 2 2 2"}) +
      snapshot(10, "pp pp pp", kOrthoBounds, "id type xu yu zu", {"2 2 3 3 3", "1 1 4 4 4"}) +
      snapshot(20, "pp pp pp", kOrthoBounds, "id type xu yu zu", {"1 1 5 5 5", "2 1 6 6 6"}) +
      snapshot(30, "ff ff ff", kOrthoBounds, "id type xu yu zu", {"1 1 7 7 7", "2 2 8 8 8"}) +
      snapshot(40, "pp pp pp", kOrthoBounds, "id type xu yu zu", {"1 1 9 9 9", "2 2 1 2 3"});
  const auto path = dump_file(text);
  const auto dump = read_lammps_dump(path, {"O", "H"});
  REQUIRE(dump.systems.size() == 3);
  // O H (periodic): steps 0, 10, 40; O O: step 20; O H without periodicity: step 30.
  CHECK(dump.timesteps == std::vector<std::vector<std::int64_t>>{{0, 10, 40}, {20}, {30}});
  CHECK(dump.systems[0].coord == std::vector<double>{1, 1, 1, 2, 2, 2, 4, 4, 4, 3, 3, 3, 9, 9, 9, 1, 2, 3});
  CHECK(dump.systems[0].box.size() == 27);
  CHECK(dump.systems[1].type_map == std::vector<std::string>{"O"});
  CHECK(dump.systems[1].source == path + ":1");
  CHECK_FALSE(dump.systems[2].periodic);
  CHECK(dump.systems[2].box.empty());
}

TEST_CASE("malformed dumps are errors naming the file, line and value", "[data][lammps_dump]") {
  const auto fails = [](const std::string& text, const std::vector<std::string>& types,
                        const std::string& what) {
    const auto path = dump_file(text);
    INFO(text);
    CHECK_THROWS_WITH(read_lammps_dump(path, types), Contains(what) && Contains(path));
  };
  const std::vector<std::string> oh = {"O", "H"};
  fails(snapshot(0, "pp pp pp", kOrthoBounds, "type x y z", {"1 1 1 1"}), oh, "no 'id'");
  fails(snapshot(0, "pp pp pp", kOrthoBounds, "id type vx vy vz", {"1 1 1 1 1"}), oh, "no coordinates");
  fails(snapshot(0, "pp pp pp", kOrthoBounds, "id type x y z", {"1 3 1 1 1"}), oh, "has type 3");
  fails(snapshot(0, "pp pp pp", kOrthoBounds, "id type x y z", {"1 1 1 1 1", "1 2 2 2 2"}), oh,
        "atom id 1 appears twice");
  fails(snapshot(0, "pp pp ff", kOrthoBounds, "id type x y z", {"1 1 1 1 1"}), oh, "some directions only");
  fails(snapshot(0, "pp pp pp", kOrthoBounds, "id type x y z", {"1 1 1 nan 1"}), oh, "non-finite");
  fails(snapshot(0, "pp pp pp", kOrthoBounds, "id type x y z", {"1 1 1 1"}), oh, "has 4 columns");
  fails(snapshot(0, "pp pp pp", "0 10\n0 10\n0 0\n", "id type x y z", {"1 1 1 1 1"}), oh, "cell");
  const auto whole = snapshot(0, "pp pp pp", kOrthoBounds, "id type x y z", {"1 1 1 1 1", "2 2 2 2 2"});
  fails(whole.substr(0, whole.rfind("2 2 2 2 2")), oh, "ends at line");
  fails("ITEM: TIMESTEP\n0\nITEM: UNITS\nlj\n", oh, "units 'lj'");
  fails("ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: ATOMS id type x y z\n1 1 0 0 0\n", oh,
        "before its BOX BOUNDS");
  CHECK_FALSE(deepkf::is_lammps_dump(dump_file("3\nwater\nO 0 0 0\n")));
}

TEST_CASE("a dump cut inside its last snapshot keeps the whole ones when the run may have been stopped",
          "[data][lammps_dump]") {
  const std::vector<std::string> oh = {"O", "H"};
  const auto first = snapshot(0, "pp pp pp", kOrthoBounds, "id type x y z", {"1 1 1 1 1", "2 2 2 2 2"});
  const auto second = snapshot(10, "pp pp pp", kOrthoBounds, "id type x y z", {"2 2 3 3 3", "1 1 4 4 4"});
  using deepkf::DumpEnd;
  // Whole: nothing is left out.
  const auto whole = read_lammps_dump(dump_file(first + second), oh, DumpEnd::kMayBeCut);
  CHECK_FALSE(whole.cut_short);
  CHECK(whole.timesteps.at(0) == std::vector<std::int64_t>{0, 10});
  // Cut after the second snapshot's header, inside an atom line, and just before the final newline (its
  // last number may be cut short): the first snapshot alone, and a cut file is no error.
  for (const std::size_t keep :
       {first.size() + 16, first.size() + second.size() - 4, first.size() + second.size() - 1}) {
    INFO("file cut after " << keep << " characters");
    const auto path = dump_file((first + second).substr(0, keep));
    const auto cut = read_lammps_dump(path, oh, DumpEnd::kMayBeCut);
    CHECK(cut.cut_short);
    REQUIRE(cut.systems.size() == 1);
    CHECK(cut.timesteps[0] == std::vector<std::int64_t>{0});
    CHECK(cut.systems[0].coord == std::vector<double>{1, 1, 1, 2, 2, 2});
    // A finished run's dump must be whole (a missing final newline alone is no error there).
    if (keep < first.size() + second.size() - 1)
      CHECK_THROWS_WITH(read_lammps_dump(path, oh), Contains(path));
  }
  // Cut inside the only snapshot: no system, no error.
  CHECK(read_lammps_dump(dump_file(first.substr(0, 40)), oh, DumpEnd::kMayBeCut).systems.empty());
  // A malformed line before the last one is still an error.
  std::string bad = first + second;
  bad.replace(bad.find("2 2 2 2 2"), 9, "2 2 2 x 2");
  CHECK_THROWS_WITH(read_lammps_dump(dump_file(bad), oh, DumpEnd::kMayBeCut), Contains("'x'"));
}
