// The dump reader on dumps written by hand: orthogonal and triclinic boxes, unsorted atoms, a file cut short.
#include <catch2/catch.hpp>
#include <fstream>

#include "src/core/Error.hpp"
#include "src/learn/LammpsTrajectory.hpp"
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

TEST_CASE("dump frames are read in atom-ID order with boxes from their bounds", "[learn][dump]") {
  const ExploredFrames t = read_explored_frames(write("two.dump", kTwoFrames), {"O", "H"});
  REQUIRE(t.frames.nframes == 2);
  CHECK(t.steps == std::vector<std::int64_t>{0, 10});
  CHECK_FALSE(t.truncated);
  CHECK(t.frames.atom_types == std::vector<int>{0, 1});
  CHECK(t.frames.type_map == std::vector<std::string>{"O", "H"});
  // Frame 0: orthogonal, origin (1, 0, -1): positions relative to it, atom 1 first.
  const std::vector<double> box0 = {5, 0, 0, 0, 5, 0, 0, 0, 5};
  CHECK(std::vector<double>(t.frames.box.begin(), t.frames.box.begin() + 9) == box0);
  CHECK(std::vector<double>(t.frames.coord.begin(), t.frames.coord.begin() + 6) ==
        std::vector<double>{0.5, 0.5, 1.0, 2.5, 2.5, 2.5});
  // Frame 1: xy = -0.5, xz = 0.5, yz = 0: xlo = -0.5 - min(0, -0.5, 0.5, 0) = 0, xhi = 6 - max(...) = 5.5,
  // ylo = 0, yhi = 5.5, so a = (5.5, 0, 0), b = (-0.5, 5.5, 0), c = (0.5, 0, 5).
  const std::vector<double> box1 = {5.5, 0, 0, -0.5, 5.5, 0, 0.5, 0, 5};
  CHECK(std::vector<double>(t.frames.box.begin() + 9, t.frames.box.end()) == box1);
  CHECK(t.frames.coord[6] == 1.5);  // origin (0, 0, -1)
  CHECK(t.frames.coord[8] == 1.0);
}

TEST_CASE("a dump cut inside a frame keeps its complete frames", "[learn][dump]") {
  std::string text = kTwoFrames;
  text = text.substr(0, text.rfind("3.5 2.5 1.5"));  // the last atom line of frame 2 is missing
  const ExploredFrames t = read_explored_frames(write("cut.dump", text), {"O", "H"});
  CHECK(t.truncated);
  CHECK(t.frames.nframes == 1);
  CHECK(t.steps == std::vector<std::int64_t>{0});
  // Cut inside the second frame's first line, and after its last atom's line but before the newline.
  text = kTwoFrames;
  const ExploredFrames header =
      read_explored_frames(write("header.dump", text.substr(0, text.rfind("STEP"))), {"O", "H"});
  CHECK(header.truncated);
  CHECK(header.frames.nframes == 1);
  const ExploredFrames newline =
      read_explored_frames(write("newline.dump", text.substr(0, text.size() - 1)), {"O", "H"});
  CHECK(newline.truncated);
  CHECK(newline.frames.nframes == 1);
}

TEST_CASE("malformed dumps are errors naming the file and line", "[learn][dump]") {
  std::string text = kTwoFrames;
  CHECK_THROWS_WITH(read_explored_frames(write("types.dump", text), {"O"}),
                    Catch::Contains("types.dump line 10: atom 2 has type 2, outside the 1 types of the run"));
  text.replace(text.find("ITEM: ATOMS id type x y z"), 25, "ITEM: ATOMS id type xu yu zu");
  CHECK_THROWS_WITH(read_explored_frames(write("cols.dump", text), {"O", "H"}),
                    Catch::Contains("cols.dump line 9: the dump has no 'x' column"));
  text = kTwoFrames;
  text.replace(text.rfind("1 1 1.5"), 7, "1 2 1.5");
  CHECK_THROWS_WITH(read_explored_frames(write("swap.dump", text), {"O", "H"}),
                    Catch::Contains("frame at step 10 has other atoms or types than the first frame"));
  text = kTwoFrames;
  text.replace(text.find("3.5 2.5 1.5"), 3, "3.x");
  CHECK_THROWS_WITH(read_explored_frames(write("num.dump", text), {"O", "H"}),
                    Catch::Contains("'3.x' is not a number"));
  CHECK_THROWS_AS(read_explored_frames("/no/such/file.dump", {"O"}), DataError);
}
