// An exploration run's dump as the loop reads it (src/data/LammpsDump.cpp does the parsing; its own tests
// cover the formats): the run's elements as the type map, one system, a file cut short keeps its whole
// frames.
#include <fstream>

#include "src/core/Error.hpp"
#include "src/learn/LammpsTrajectory.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;

namespace {

std::string write(const std::string& name, const std::string& text) {
  const auto path = test::make_temp_dir("dump") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kTwoFrames = R"(ITEM: TIMESTEP
0
ITEM: NUMBER OF ATOMS
2
ITEM: BOX BOUNDS pp pp pp
1.0 6.0
0.0 5.0
-1.0 4.0
ITEM: ATOMS id type x y z
2 2 3.5 2.5 1.5
1 1 1.5 0.5 0.0
ITEM: TIMESTEP
10
ITEM: NUMBER OF ATOMS
2
ITEM: BOX BOUNDS xy xz yz pp pp pp
-0.5 6.0 -0.5
0.0 5.5 0.5
-1.0 4.0 0.0
ITEM: ATOMS id type x y z
1 1 1.5 0.5 0.0
2 2 3.5 2.5 1.5
)";

}  // namespace

TEST_CASE("dump frames are read in atom-ID order with the run's elements as type map", "[learn][dump]") {
  const ExploredFrames t = read_explored_frames(write("two.dump", kTwoFrames), {"H", "O"});
  REQUIRE(t.frames.nframes == 2);
  CHECK(t.steps == std::vector<std::int64_t>{0, 10});
  CHECK_FALSE(t.truncated);
  // LAMMPS type 1 is H here; the first atom in ID order has type 1.
  CHECK(t.frames.type_map == std::vector<std::string>{"H", "O"});
  CHECK(t.frames.atom_types == std::vector<int>{0, 1});
  const std::vector<double> box0 = {5, 0, 0, 0, 5, 0, 0, 0, 5};
  CHECK(std::vector<double>(t.frames.box.begin(), t.frames.box.begin() + 9) == box0);
  CHECK(std::vector<double>(t.frames.coord.begin(), t.frames.coord.begin() + 6) ==
        std::vector<double>{1.5, 0.5, 0.0, 3.5, 2.5, 1.5});
  // Frame 1: xy = -0.5, xz = 0.5, yz = 0: xlo = -0.5 - min(0, -0.5, 0.5, 0) = 0, xhi = 6 - max(...) = 5.5,
  // ylo = 0, yhi = 5.5, so a = (5.5, 0, 0), b = (-0.5, 5.5, 0), c = (0.5, 0, 5).
  const std::vector<double> box1 = {5.5, 0, 0, -0.5, 5.5, 0, 0.5, 0, 5};
  CHECK(std::vector<double>(t.frames.box.begin() + 9, t.frames.box.end()) == box1);
}

TEST_CASE("a dump cut inside a frame keeps its complete frames", "[learn][dump]") {
  std::string text = kTwoFrames;
  text = text.substr(0, text.rfind("3.5 2.5 1.5"));  // the last atom line of frame 2 is missing
  const ExploredFrames t = read_explored_frames(write("cut.dump", text), {"O", "H"});
  CHECK(t.truncated);
  CHECK(t.frames.nframes == 1);
  CHECK(t.steps == std::vector<std::int64_t>{0});
  const ExploredFrames none = read_explored_frames(write("none.dump", text.substr(0, 30)), {"O", "H"});
  CHECK(none.truncated);
  CHECK(none.frames.nframes == 0);
  CHECK(none.steps.empty());
}

TEST_CASE("dumps the loop cannot use are errors naming the file", "[learn][dump]") {
  std::string text = kTwoFrames;
  CHECK_THROWS_WITH(read_explored_frames(write("types.dump", text), {"O"}),
                    Catch::Contains("types.dump line") && Catch::Contains("has type 2"));
  text.replace(text.rfind("1 1 1.5"), 7, "1 2 1.5");
  CHECK_THROWS_WITH(read_explored_frames(write("swap.dump", text), {"O", "H"}),
                    Catch::Contains("swap.dump: the frame at step 10 has other atoms"));
  text = kTwoFrames;
  text.replace(text.find("pp pp pp"), 8, "ff ff ff");
  text.replace(text.find("pp pp pp"), 8, "ff ff ff");
  CHECK_THROWS_WITH(read_explored_frames(write("open.dump", text), {"O", "H"}),
                    Catch::Contains("open.dump: the box is not periodic"));
  CHECK_THROWS_AS(read_explored_frames("/no/such/file.dump", {"O"}), DataError);
}
