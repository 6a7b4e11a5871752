// CP2K labels against the shipped silicon data: a frame of data/si_cp2k.h5 is run again through the template
// configs/learn/si_cp2k.inp (the settings that made it) and the parsed energy, forces and virial must equal
// the stored ones, whose units and signs tests/data_cp2k pins with finite differences. Then damaged copies of
// that real output are each rejected with the reason. Needs cp2k.psmp (Debian's cp2k); skipped without it.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/geometry/Cell.hpp"
#include "src/learn/Cp2kInput.hpp"
#include "src/learn/Cp2kOutput.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;

namespace {

std::string cp2k_or_skip() {
  try {
    return find_program("cp2k.psmp", "/", "cp2k", "test");
  } catch (const ConfigError&) {
    std::printf("cp2k.psmp is not installed (apt-get install cp2k cp2k-data): skipped\n");
    std::exit(77);
  }
}

// One CP2K run of frame 2 of data/si_cp2k.h5#/Si8, made once per test run.
struct Reference {
  System frame;        // the stored frame with its labels
  std::string output;  // CP2K's output for it
  double wall_s = 0;
};

const Reference& reference() {
  static Reference r;
  if (!r.output.empty()) return r;
  const std::string cp2k = cp2k_or_skip();
  const auto data = Dataset::load({std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5#/Si8"}, {"Si"});
  r.frame = select_frames(data.systems.at(0), {2});
  const Cp2kTemplate input(std::string(DEEPKF_SOURCE_DIR) + "/configs/learn/si_cp2k.inp",
                           {{"Si", {"DZVP-MOLOPT-SR-GTH", "GTH-PBE-q4"}}}, 0.3, "the test");
  const auto dir = test::make_temp_dir("cp2k-si8");
  std::ofstream(dir + "/in.inp") << input.render(r.frame, 0);
  ProgramRun run{{cp2k, "-i", "in.inp"}, dir, {{"OMP_NUM_THREADS", "1"}}, "out.log", 900.0};
  const ProgramResult result = run_program(run);
  REQUIRE(result.ok());
  r.output = test::read_text(dir + "/out.log");
  r.wall_s = result.wall_s;
  return r;
}

double max_abs_diff(const double* a, const double* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("CP2K labels parse to the stored labels of the same frame", "[learn][cp2k][slow]") {
  const Reference& r = reference();
  const std::vector<std::string> elements(8, "Si");
  const double volume = Cell(r.frame.box.data()).volume();
  const Cp2kLabels l = parse_cp2k_output(r.output, elements, volume, "out.log");
  INFO("CP2K took " << r.wall_s << " s");
  // The stored labels came from the same CP2K and input (coordinates printed to 12 decimals there, 10 here).
  CHECK(l.energy == Approx(r.frame.energy[0]).epsilon(0).margin(1e-5));
  REQUIRE(l.force.size() == 24);
  CHECK(max_abs_diff(l.force.data(), r.frame.force.data(), 24) < 1e-4);
  CHECK(max_abs_diff(l.virial.data(), r.frame.virial.data(), 9) < 1e-3);
  // Not a trivially small frame: forces and the virial are well above the tolerances.
  CHECK(*std::max_element(r.frame.force.begin(), r.frame.force.end()) > 0.1);
  CHECK(std::abs(r.frame.virial[1]) > 0.1);
}

TEST_CASE("damaged or failed CP2K outputs are rejected with the reason", "[learn][cp2k][slow]") {
  const Reference& r = reference();
  const std::vector<std::string> si(8, "Si");
  const auto error = [&](const std::string& text, const std::vector<std::string>& elements) -> std::string {
    try {
      parse_cp2k_output(text, elements, 160.0, "out.log");
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string& out = r.output;
  CHECK(error(out.substr(0, out.find("ATOMIC FORCES")), si) ==
        "CP2K output out.log: the run did not end (no 'PROGRAM ENDED AT')");
  CHECK(error(out + "\n *** SCF run NOT converged ***\n", si) ==
        "CP2K output out.log: the SCF did not converge");
  std::vector<std::string> other = si;
  other[3] = "Ge";
  CHECK(error(out, other) == "CP2K output out.log: force row 4 is for element Si, the frame's atom 4 is Ge");
  CHECK(error(out, std::vector<std::string>(9, "Si")) ==
        "CP2K output out.log: the force block has 8 rows for the 9 atoms of the frame");
  std::string no_stress = out;
  no_stress.replace(no_stress.find("Analytical stress tensor [GPa]"), 30, "Nothing");
  CHECK(error(no_stress, si) ==
        "CP2K output out.log: 0 stress tensor blocks, expected 1 (STRESS_TENSOR ANALYTICAL, &PRINT "
        "&STRESS_TENSOR ON)");
  std::string nan_force = out;
  const auto row = nan_force.find("      1      1      Si");
  REQUIRE(row != std::string::npos);
  nan_force.replace(nan_force.find_first_of("-0123456789", row + 24), 3, "NaN");
  CHECK_THAT(error(nan_force, si), Catch::Contains("is not a finite number"));
}
