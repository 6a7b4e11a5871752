// The label stage with a stand-in for CP2K (a shell script printing CP2K's output layout with known numbers):
// unit conversions, a failed and an unconverged run recorded and skipped, results kept and not run again,
// and the label file with its provenance.
#include <spdlog/sinks/null_sink.h>
#include <sys/stat.h>

#include <fstream>

#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/learn/LabelStore.hpp"
#include "src/learn/Labelling.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using json = nlohmann::json;

namespace {

// Frame folder frame_000: a converged run, E = -2 Ha, F_atom1 = (0.01, -0.02, 0), F_atom2 = -F_atom1
// (Ha/Bohr), stress diag(1, 2, 3) GPa with xy = yx = 0.5. frame_001: exits with status 1. frame_002: SCF not
// converged. Each run appends a line to ../runs.txt.
const char* kFakeCp2k = R"SH(#!/bin/sh
echo run >> ../runs.txt
case "$(basename "$PWD")" in
  frame_001) echo "ABORT: something went wrong"; exit 1 ;;
  frame_002) echo " *** SCF run NOT converged ***" ;;
esac
cat <<'OUT'
 ENERGY| Total FORCE_EVAL ( QS ) energy [a.u.]:              -2.000000000000000

 ATOMIC FORCES in [a.u.]

 # Atom   Kind   Element          X              Y              Z
      1      1      Si          0.01000000    -0.02000000     0.00000000
      2      1      Si         -0.01000000     0.02000000     0.00000000
 SUM OF ATOMIC FORCES           0.00000000     0.00000000     0.00000000     0.00000000

 STRESS| Analytical stress tensor [GPa]
 STRESS|                        x                   y                   z
 STRESS|      x        1.00000000000E+00   5.00000000000E-01   0.00000000000E+00
 STRESS|      y        5.00000000000E-01   2.00000000000E+00   0.00000000000E+00
 STRESS|      z        0.00000000000E+00   0.00000000000E+00   3.00000000000E+00
 STRESS| 1/3 Trace                                             2.00000000000E+00

  **** **** ******  **  PROGRAM ENDED AT                 2026-11-24 19:39:02.244
OUT
)SH";

const char* kTemplate =
    "&FORCE_EVAL\n &SUBSYS\n  &CELL\n   {{cell}}\n  &END CELL\n  &COORD\n   {{coord}}\n"
    "  &END COORD\n &END SUBSYS\n &PRINT\n  &FORCES ON\n  &END FORCES\n  &STRESS_TENSOR ON\n"
    "  &END STRESS_TENSOR\n &END PRINT\n&END FORCE_EVAL\n";

System si2(double shift) {
  System s;
  s.source = "test";
  s.type_map = {"Si"};
  s.atom_types = {0, 0};
  s.natoms = 2;
  s.nframes = 1;
  s.coord = {0, 0, 0, 1.3 + shift, 1.4, 1.5};
  s.box = {4, 0, 0, 0, 5, 0, 0, 0, 6};
  return s;
}

int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

}  // namespace

TEST_CASE("labels are converted, failures recorded and skipped, finished frames never run twice",
          "[learn][label]") {
  const auto dir = test::make_temp_dir("label-stage");
  const std::string script = dir + "/fake-cp2k";
  std::ofstream(script) << kFakeCp2k;
  chmod(script.c_str(), 0755);
  std::ofstream(dir + "/template.inp") << kTemplate;
  LearnConfig cfg;
  cfg.file = "loop.json";
  cfg.base_dir = dir;
  cfg.label.cp2k = script;
  cfg.label.jobs = 2;
  const Cp2kTemplate input(dir + "/template.inp", {}, 0.0, "label");
  const std::vector<System> frames = {si2(0.0), si2(0.1), si2(0.2)};
  auto log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  const std::string stage = dir + "/label";

  const auto first = label_frames(cfg, input, frames, stage, *log);
  REQUIRE(first.size() == 3);
  REQUIRE(first[0].ok);
  // E = -2 Ha = -54.422772 eV; F = 0.01 Ha/Bohr = 0.5142208 eV/A; W = V sigma / 160.21766 with V = 120 A^3.
  CHECK(first[0].labels.energy == Approx(-2 * 27.211386).epsilon(1e-12));
  CHECK(first[0].labels.force == std::vector<double>{0.5142208, -1.0284416, 0, -0.5142208, 1.0284416, 0});
  CHECK(first[0].labels.virial[0] == Approx(120.0 * 1.0 / 160.21766).epsilon(1e-12));
  CHECK(first[0].labels.virial[1] == Approx(120.0 * 0.5 / 160.21766).epsilon(1e-12));
  CHECK(first[0].labels.virial[3] == first[0].labels.virial[1]);
  CHECK(first[0].labels.virial[8] == Approx(120.0 * 3.0 / 160.21766).epsilon(1e-12));
  CHECK_FALSE(first[1].ok);
  CHECK_THAT(first[1].failure, Catch::Contains("fake-cp2k exited with status 1 in " + stage + "/frame_001") &&
                                   Catch::Contains("ABORT: something went wrong"));
  CHECK_FALSE(first[2].ok);
  CHECK_THAT(first[2].failure, Catch::Contains("the SCF did not converge"));
  CHECK(count_lines(stage + "/runs.txt") == 3);
  // The input CP2K got holds the frame.
  std::ifstream in(stage + "/frame_001/in.inp");
  std::stringstream text;
  text << in.rdbuf();
  CHECK_THAT(text.str(), Catch::Contains("   Si 1.4000000000 1.4000000000 1.5000000000\n  &END COORD"));

  // Started again (a loop resumed after a kill): every frame has its result, nothing runs, failures stay
  // failed.
  const auto again = label_frames(cfg, input, frames, stage, *log);
  CHECK(count_lines(stage + "/runs.txt") == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(again[i].reused);
    CHECK(again[i].ok == first[i].ok);
    CHECK(again[i].failure == first[i].failure);
  }
  CHECK(again[0].labels.force == first[0].labels.force);
}

TEST_CASE("labelled frames are grouped per iteration and kind of frame, with their provenance",
          "[learn][label]") {
  const auto dir = test::make_temp_dir("label-store");
  const auto labelled = [](System s, double energy, int index) {
    s.energy = {energy};
    s.force.assign(6, 0.1 * index);
    s.virial.assign(9, 0.01 * index);
    return LabelledFrame{s, json{{"index", index}}};
  };
  System si3 = si2(0.0);
  si3.atom_types = {0, 0, 0};
  si3.natoms = 3;
  si3.coord.insert(si3.coord.end(), {2, 2, 2});
  LabelledFrame big = labelled(si3, -3.0, 9);
  big.frame.force.assign(9, 0.9);
  const std::string path = dir + "/labels.h5";
  write_label_file(path, {{0, {labelled(si2(0), -1, 0), big, labelled(si2(0.1), -2, 1)}},
                          {1, {}},
                          {2, {labelled(si2(0.2), -4, 2)}}});

  const auto data = Dataset::load({path}, {"Si"});
  REQUIRE(data.systems.size() == 3);
  CHECK(data.systems[0].source == path + "#/iter.000/Si2");
  CHECK(data.systems[0].energy == std::vector<double>{-1, -2});
  CHECK(data.systems[0].coord[3] == 1.3);
  CHECK(data.systems[0].coord[9] == Approx(1.4));
  CHECK(data.systems[1].source == path + "#/iter.000/Si3");
  CHECK(data.systems[1].force == std::vector<double>(9, 0.9));
  CHECK(data.systems[2].source == path + "#/iter.002/Si2");
  CHECK(data.systems[2].virial == std::vector<double>(9, 0.02));
  CHECK(json::parse(read_hdf5_text_attribute(path, "/iter.000/Si2", "provenance")) ==
        json::parse(R"([{"index":0},{"index":1}])"));
  CHECK(read_hdf5_text_attribute(path, "/iter.000/Si2", "nothing").empty());
  // One group per iteration can be named on its own, as the training inputs do.
  CHECK(Dataset::load({path + "#/iter.002"}, {"Si"}).total_frames() == 1);
}
