// Dumps written by the real LAMMPS read back by deepkf's reader (src/data/LammpsDump.hpp) against the frame
// that started the run, and the ensemble deviation deepkf computes for the frames of a dump
// (src/uncertainty/EnsembleDeviation.hpp) against the model_devi.out that pair_style deepkf wrote for the
// same steps, on 1 and 2 ranks.
#include <torch/torch.h>  // before Catch2: glog's CHECK must not replace Catch2's

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/data/LammpsDump.hpp"
#include "src/geometry/Cell.hpp"
#include "src/model/ModelFile.hpp"
#include "src/uncertainty/EnsembleDeviation.hpp"
#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

const char* const kSetup = kReadDataSetup;

// Largest distance between the atoms of two snapshots (natoms x 3), each pair brought together by lattice
// vectors of `box` (minimum image): positions that differ only by periodic images agree.
double max_image_distance(const std::vector<double>& a, const std::vector<double>& b, const double* box) {
  REQUIRE(a.size() == b.size());
  const Cell cell(box);
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); i += 3) {
    double d[3] = {a[i] - b[i], a[i + 1] - b[i + 1], a[i + 2] - b[i + 2]};
    cell.to_fractional(d, d);
    for (double& x : d) x -= std::round(x);
    cell.to_cartesian(d, d);
    worst = std::max(worst, std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
  }
  return worst;
}

std::vector<std::vector<double>> numeric_rows(const std::string& text) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    rows.emplace_back();
    for (double v; words >> v;) rows.back().push_back(v);
  }
  return rows;
}

}  // namespace

TEST_CASE("dumps of a triclinic run read back to the frame that started it, in every coordinate form",
          "[lammps][lammps_dump]") {
  const auto frame = water_frame(0, /*tilt=*/true);
  const auto dir = make_temp_dir("lammps-dump-read");
  write_data_file(dir + "/data.lmp", frame);
  // Free flight (no forces), 2 ranks so that atoms are written out of id order; x y z at LAMMPS's default
  // precision, the other forms at full precision.
  const auto r = run_lammps(dir, std::string(kSetup) + R"(pair_style zero 6.0
pair_coeff * *
velocity all create 2000 4928 mom yes rot yes dist gaussian
fix 1 all nve
timestep 0.002
dump a all custom 10 a.dump id type x y z
dump b all custom 10 b.dump id type xs ys zs
dump_modify b format float %.17g
dump c all custom 10 c.dump id element xu yu zu
dump_modify c element O H format float %.17g
run 40
)",
                            2);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto a = read_lammps_dump(dir + "/a.dump", {"O", "H"});
  const auto b = read_lammps_dump(dir + "/b.dump", {"O", "H"});
  const auto c = read_lammps_dump(dir + "/c.dump", {});
  for (const auto* d : {&a, &b, &c}) {
    REQUIRE(d->systems.size() == 1);
    CHECK(d->timesteps[0] == std::vector<std::int64_t>{0, 10, 20, 30, 40});
    const System& s = d->systems[0];
    CHECK(s.natoms == frame.natoms());
    CHECK(s.periodic);
    // Elements in id order are the frame's types (0 = O, 1 = H), whatever order the ranks wrote.
    REQUIRE(s.type_map.size() == 2);
    for (std::int64_t i = 0; i < s.natoms; ++i)
      CHECK(s.type_map[static_cast<std::size_t>(s.atom_types[static_cast<std::size_t>(i)])] ==
            (frame.types[static_cast<std::size_t>(i)] == 0 ? "O" : "H"));
    // The cell of every snapshot is the frame's (nve at fixed volume).
    for (std::int64_t f = 0; f < s.nframes; ++f)
      for (int k = 0; k < 9; ++k)
        CHECK(s.box[static_cast<std::size_t>(9 * f + k)] == Approx(frame.box[k]).margin(1e-9));
  }
  const auto snapshot = [](const LammpsDump& d, std::int64_t f) {
    const auto& s = d.systems[0];
    return std::vector<double>(s.coord.begin() + 3 * s.natoms * f, s.coord.begin() + 3 * s.natoms * (f + 1));
  };
  // Step 0 is the frame itself; later steps agree between the three forms up to periodic images.
  CHECK(max_image_distance(snapshot(a, 0), frame.coord, frame.box.data()) < 1e-4);  // %g: 6 digits
  CHECK(max_image_distance(snapshot(b, 0), frame.coord, frame.box.data()) < 1e-9);
  CHECK(max_image_distance(snapshot(c, 0), frame.coord, frame.box.data()) < 1e-9);
  double moved = 0.0;
  for (std::int64_t f = 1; f < 5; ++f) {
    CHECK(max_image_distance(snapshot(a, f), snapshot(b, f), frame.box.data()) < 1e-4);
    CHECK(max_image_distance(snapshot(c, f), snapshot(b, f), frame.box.data()) < 1e-9);
    moved = std::max(moved, max_image_distance(snapshot(b, f), frame.coord, frame.box.data()));
  }
  CHECK(moved > 0.1);  // the atoms did move: the comparisons above are not of five copies of one frame
}

TEST_CASE("the ensemble deviation of a dump's frames equals pair_style deepkf's model_devi.out",
          "[lammps][lammps_dump][deviation]") {
  const auto frame = water_frame(1, /*tilt=*/true);
  for (int np : {1, 2}) {
    INFO(np << " ranks");
    const auto dir = make_temp_dir("lammps-dump-devi" + std::to_string(np));
    write_water_model(dir + "/a.pt", 21);
    write_water_model(dir + "/b.pt", 22);
    write_water_model(dir + "/c.pt", 23);
    write_data_file(dir + "/data.lmp", frame);
    const auto r =
        run_lammps(dir, std::string(kSetup) + R"(pair_style deepkf a.pt b.pt c.pt out_freq 5 out_file devi.out
pair_coeff * * O H
velocity all create 330 77 mom yes rot yes dist gaussian
fix 1 all nve
timestep 0.0005
dump d all custom 5 md.dump id type x y z
dump_modify d format float %.17g
run 20
)",
                   np);
    INFO(r.output);
    REQUIRE(r.status == 0);
    auto dump = read_lammps_dump(dir + "/md.dump", {"O", "H"});
    REQUIRE(dump.systems.size() == 1);
    std::vector<FrameSubset> sets = whole({std::make_shared<MemoryFrameSource>(dump.systems[0])});
    const auto models = Ensemble::load({dir + "/a.pt", dir + "/b.pt", dir + "/c.pt"});
    const auto ours = ensemble_deviation(models, sets);
    const auto plugin = numeric_rows(read_text(dir + "/devi.out"));
    REQUIRE(plugin.size() == 5);
    REQUIRE(ours.size() == 5);
    for (std::size_t k = 0; k < ours.size(); ++k) {
      INFO("timestep " << dump.timesteps[0][k]);
      REQUIRE(plugin[k].size() == 7);
      CHECK(plugin[k][0] == static_cast<double>(dump.timesteps[0][k]));
      const auto& d = ours[k].deviation;
      const double mine[6] = {d.max_devi_v, d.min_devi_v, d.avg_devi_v,
                              d.max_devi_f, d.min_devi_f, d.avg_devi_f};
      for (int c = 0; c < 6; ++c) CHECK(mine[c] == Approx(plugin[k][1 + c]).epsilon(1e-7));
      CHECK(d.max_devi_f > 0.0);
      // The dump has no labels: no errors.
      CHECK(std::isnan(ours[k].errors.energy));
      CHECK(std::isnan(ours[k].errors.force_rmse));
    }
  }
}
