// Start structures through the real LAMMPS: a silicon frame in a general cell (rotated, sheared, not in
// LAMMPS's form) written as a data file must give LAMMPS the same energy and the same interatomic distances
// as the frame itself (the model is rotation-invariant, so any error in the rotation, the tilt reduction or
// the wrapping shows), and the dump LAMMPS writes must read back as the data that went in.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/data/Dataset.hpp"
#include "src/eval/LabelledErrors.hpp"
#include "src/geometry/Cell.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "src/learn/LammpsInput.hpp"
#include "src/learn/LammpsTrajectory.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;

namespace {

// Frame 1 of data/si_cp2k.h5#/Si16 in the cell a' = a, b' = b + a, c' = c - 2 b + a (the same lattice),
// turned by a rotation about (1, 2, 3), so that no cell vector lies along an axis and the tilts need
// reducing.
System general_frame() {
  const auto data = Dataset::load({std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5#/Si16"}, {"Si"});
  System s = select_frames(data.systems.at(0), {1});
  const double* h = s.box.data();
  double cell[9];
  for (int d = 0; d < 3; ++d) {
    cell[d] = h[d];
    cell[3 + d] = h[3 + d] + h[d];
    cell[6 + d] = h[6 + d] - 2 * h[3 + d] + h[d];
  }
  // Rodrigues rotation by 0.7 rad about the unit vector of (1, 2, 3).
  const double n = std::sqrt(14.0), k[3] = {1 / n, 2 / n, 3 / n}, t = 0.7;
  const double c = std::cos(t), si = std::sin(t);
  double r[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double cross[3][3] = {{0, -k[2], k[1]}, {k[2], 0, -k[0]}, {-k[1], k[0], 0}};
      r[i][j] = (i == j ? c : 0.0) + si * cross[i][j] + (1 - c) * k[i] * k[j];
    }
  const auto turn = [&](double* v) {
    const double x[3] = {v[0], v[1], v[2]};
    for (int i = 0; i < 3; ++i) v[i] = r[i][0] * x[0] + r[i][1] * x[1] + r[i][2] * x[2];
  };
  for (int row = 0; row < 3; ++row) turn(cell + 3 * row);
  for (std::size_t a = 0; a < s.coord.size(); a += 3) turn(&s.coord[a]);
  s.box.assign(cell, cell + 9);
  return s;
}

// Sorted minimum-image distances between all pairs of atoms of frame f (A).
std::vector<double> distances(const System& s, std::int64_t f) {
  const Cell cell(s.box.data() + 9 * f);
  const double* x = s.coord.data() + 3 * s.natoms * f;
  std::vector<double> out;
  for (std::int64_t i = 0; i < s.natoms; ++i)
    for (std::int64_t j = i + 1; j < s.natoms; ++j) {
      double d[3] = {x[3 * j] - x[3 * i], x[3 * j + 1] - x[3 * i + 1], x[3 * j + 2] - x[3 * i + 2]};
      cell.to_fractional(d, d);
      for (double& v : d) v -= std::round(v);
      // The nearest image among the 7^3 around the rounded one: rounding alone is not the minimum image in
      // a skewed cell (general_frame's c' = c - 2b + a needs images up to 3 cells away), and the two cells
      // compared here are different bases of one lattice.
      double best = INFINITY;
      for (int a = -3; a <= 3; ++a)
        for (int b = -3; b <= 3; ++b)
          for (int c = -3; c <= 3; ++c) {
            double e[3] = {d[0] + a, d[1] + b, d[2] + c};
            cell.to_cartesian(e, e);
            best = std::min(best, std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]));
          }
      out.push_back(best);
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("LAMMPS's box form keeps the lattice and reduces the tilts", "[learn][lammps]") {
  const System s = general_frame();
  const LammpsBox b = lammps_box(s.box.data(), "test");
  CHECK(b.triclinic());
  CHECK(std::abs(b.xy) <= b.lx / 2);
  CHECK(std::abs(b.xz) <= b.lx / 2);
  CHECK(std::abs(b.yz) <= b.ly / 2);
  const auto rows = b.rows();
  CHECK(Cell(rows.data()).volume() == Approx(Cell(s.box.data()).volume()).epsilon(1e-12));
  const double cube[9] = {5, 0, 0, 0, 6, 0, 0, 0, 7};
  CHECK_FALSE(lammps_box(cube, "test").triclinic());
  const double left[9] = {5, 0, 0, 0, 0, 6, 0, 7, 0};
  CHECK_THROWS_WITH(lammps_box(left, "box of x"),
                    Catch::Contains("box of x") && Catch::Contains("left-handed"));
}

TEST_CASE("the rotation to LAMMPS's orientation is proper and makes the cell lower-triangular",
          "[learn][lammps]") {
  const System s = general_frame();
  const auto r = lammps_rotation(s.box.data(), "test");
  // R R^T = I and det R = +1: a rotation, not a reflection (forces turned with it keep their handedness).
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double d = 0;
      for (int k = 0; k < 3; ++k) d += r[3 * i + k] * r[3 * j + k];
      CHECK(d == Approx(i == j ? 1.0 : 0.0).margin(1e-14));
    }
  const double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) +
                     r[2] * (r[3] * r[7] - r[4] * r[6]);
  CHECK(det == Approx(1.0).epsilon(1e-14));
  // Turned, a lies along x and b in the xy plane, c above it; the lengths are kept.
  double turned[9];
  for (int row = 0; row < 3; ++row)
    for (int i = 0; i < 3; ++i) {
      const double* v = s.box.data() + 3 * row;
      turned[3 * row + i] = v[0] * r[3 * i] + v[1] * r[3 * i + 1] + v[2] * r[3 * i + 2];
    }
  const double la = std::sqrt(s.box[0] * s.box[0] + s.box[1] * s.box[1] + s.box[2] * s.box[2]);
  CHECK(turned[0] == Approx(la).epsilon(1e-14));
  CHECK(turned[1] == Approx(0.0).margin(1e-12));
  CHECK(turned[2] == Approx(0.0).margin(1e-12));
  CHECK(turned[4] > 0.0);
  CHECK(turned[5] == Approx(0.0).margin(1e-12));
  CHECK(turned[8] > 0.0);
}

TEST_CASE("a start structure gives LAMMPS the frame's energy and distances", "[learn][lammps]") {
  const auto dir = test::make_temp_dir("lammps-start");
  const System frame = general_frame();
  DeepPot model(test::small_silicon_config(40));
  const std::string model_path = dir + "/model.pt";
  save_model(model_path, model, nlohmann::json::object());

  std::ofstream(dir + "/start.data") << lammps_data_text(frame, 0, {28.085});
  MdRun md;
  md.plugin = DEEPKF_PLUGIN;
  md.models = {model_path};
  md.elements = {"Si"};
  std::string input = lammps_input_text(md);
  // run 0 instead of MD, with the energy printed to full precision.
  input = input.substr(0, input.find("velocity"));
  input += "thermo_style custom step pe\nthermo_modify format float %.12f\n";
  input +=
      "dump traj all custom 1 traj.dump id type x y z\ndump_modify traj sort id format float %.12g\nrun 0\n";
  std::ofstream(dir + "/in.lammps") << input;
  const ProgramRun run{{DEEPKF_LMP, "-in", "in.lammps", "-log", "log.lammps"},
                       dir,
                       {{"OMP_NUM_THREADS", "1"}},
                       "lmp.out",
                       300};
  const ProgramResult r = run_program(run);
  INFO(failure_text(run, r));
  REQUIRE(r.ok());
  // The thermo row "0 <pe>".
  std::ifstream log(dir + "/log.lammps");
  double pe = NAN;
  bool next = false;
  for (std::string line; std::getline(log, line);) {
    std::istringstream in(line);
    std::string first;
    in >> first;
    if (next && first == "0") {
      in >> pe;
      break;
    }
    next = first == "Step";
  }
  Dataset data;
  data.systems = {frame};
  data.type_map = {"Si"};
  const LoadedModel loaded = load_model(model_path);
  const double direct = labelled_errors(loaded, data, 1).frames.at(0).e_pred;
  CHECK(pe == Approx(direct).epsilon(1e-10));

  const ExploredFrames t = read_explored_frames(dir + "/traj.dump", {"Si"});
  REQUIRE(t.frames.nframes == 1);
  CHECK(t.steps == std::vector<std::int64_t>{0});
  const auto rows = lammps_box(frame.box.data(), "test").rows();
  for (int k = 0; k < 9; ++k)
    CHECK(t.frames.box[static_cast<std::size_t>(k)] ==
          Approx(rows[static_cast<std::size_t>(k)]).margin(1e-9));
  const auto want = distances(frame, 0), got = distances(t.frames, 0);
  REQUIRE(want.size() == got.size());
  double worst = 0;
  for (std::size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::abs(want[k] - got[k]));
  CHECK_THAT(worst, Catch::Matchers::WithinAbs(0.0, 1e-9));  // dumped with %.12g
}
