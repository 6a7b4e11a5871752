// pair_style deepkf in the real LAMMPS (plugin load) against the direct C++ evaluation of the same model on
// the same frame through deepkf's own periodic neighbour list, and LAMMPS-level behaviour: rank counts,
// energy conservation, model deviation and error messages.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/model/ModelFile.hpp"
#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/lammps_plugin/PairChecks.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

TEST_CASE("run 0 energies, forces and virials equal the direct evaluation", "[lammps]") {
  SECTION("orthorhombic water frame, 1 rank") { check_run0(water_frame(0, false), 1); }
  SECTION("orthorhombic water frame, 2 ranks") { check_run0(water_frame(3, false), 2); }
  SECTION("triclinic water frame, 1 rank") { check_run0(water_frame(1, true), 1); }
  SECTION("triclinic water frame, 4 ranks") { check_run0(water_frame(2, true), 4); }
  SECTION("compressed model, orthorhombic water frame, 1 rank") {
    check_run0(water_frame(0, false), 1, true);
  }
  SECTION("compressed model, triclinic water frame, 4 ranks") { check_run0(water_frame(2, true), 4, true); }
}

TEST_CASE("100 MD steps give the same trajectory on 1, 2 and 4 ranks", "[lammps]") {
  const auto frame = water_frame(0, false);
  std::vector<std::vector<double>> uncompressed;  // 1 rank
  for (bool compressed : {false, true}) {
    INFO((compressed ? "compressed model" : "uncompressed model"));
    std::vector<std::vector<std::vector<double>>> ends;
    for (int np : {1, 2, 4}) {
      const auto dir = make_temp_dir("lammps-np" + std::to_string(np));
      write_water_model(dir + "/model.pt", 11);
      if (compressed) {
        write_compressed_model(dir + "/model.pt", dir + "/compressed.pt");
        std::filesystem::rename(dir + "/compressed.pt", dir + "/model.pt");
      }
      write_data_file(dir + "/data.lmp", frame);
      ends.push_back(trajectory_end(dir, np, 100));
    }
    // positions (A) and velocities (A/ps) after 100 steps differ only by the summation order
    CHECK(max_row_diff(ends[0], ends[1]) < 1e-7);
    CHECK(max_row_diff(ends[0], ends[2]) < 1e-7);
    // the compressed model's trajectory follows the uncompressed one (forces within ~1e-9 eV/A)
    if (compressed) CHECK(max_row_diff(ends[0], uncompressed) < 1e-6);
    if (!compressed) uncompressed = ends[0];
  }
}

TEST_CASE("a cell smaller than the cutoff: one cell gives 1/8 of the energy of its 2x2x2 replica",
          "[lammps]") {
  // rcut 6 A in a 4.5 A triclinic cell: every atom sees several images of each neighbour, which LAMMPS
  // provides as ghosts. Energy and pressure must not depend on whether the images are ghosts or atoms.
  const auto dir = make_temp_dir("lammps-small-cell");
  write_water_model(dir + "/model.pt", 11);
  std::vector<std::vector<double>> pe;
  for (int reps : {1, 2}) {
    const std::string input =
        "units metal\nboundary p p p\natom_style atomic\natom_modify map yes\n"
        "region cell prism 0 4.5 0 4.7 0 4.9 0.6 -0.4 0.3\ncreate_box 2 cell\n"
        "create_atoms 1 random 4 4211 NULL\n"
        "create_atoms 2 random 8 4212 NULL\nmass 1 15.9994\nmass 2 1.00794\n"
        "replicate " +
        std::to_string(reps) + " " + std::to_string(reps) + " " + std::to_string(reps) + "\n" +
        pair_lines("model.pt") +
        "thermo_style custom step pe press atoms\nthermo_modify format float %.17g\nrun 0\n";
    const auto r = run_lammps(dir, input, 2);
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto rows = thermo_rows(read_text(dir + "/log.lammps"), 4);
    REQUIRE(rows.size() == 1);
    pe.push_back(rows[0]);
  }
  REQUIRE(pe[0][3] == 12);
  REQUIRE(pe[1][3] == 96);
  CHECK(std::abs(8 * pe[0][1] - pe[1][1]) < 1e-8 * std::abs(pe[1][1]));
  CHECK(std::abs(pe[0][2] - pe[1][2]) < 1e-6 * std::max(1.0, std::abs(pe[1][2])));
}

TEST_CASE("ranks that own no atoms work", "[lammps]") {
  // 24 atoms of a water frame in one corner of a large box; 4 ranks along x: two of them own nothing.
  auto frame = water_frame(0, false);
  Frame small;
  small.box = {40, 0, 0, 0, 12.445, 0, 0, 0, 12.445};
  for (int i = 0; i < 24; ++i) {
    small.types.push_back(frame.types[i]);
    for (int d = 0; d < 3; ++d)
      small.coord.push_back(frame.coord[3 * i + d] * (d == 0 ? 0.5 : 1.0) + (d == 0 ? 2 : 0));
  }
  std::vector<std::vector<std::vector<double>>> ends;
  for (int np : {1, 4}) {
    const auto dir = make_temp_dir("lammps-empty" + std::to_string(np));
    write_water_model(dir + "/model.pt", 11);
    write_data_file(dir + "/data.lmp", small);
    ends.push_back(trajectory_end(dir, np, 20, np == 4 ? "processors 4 1 1\n" : ""));
  }
  CHECK(max_row_diff(ends[0], ends[1]) < 1e-7);
}

TEST_CASE("model deviation: two models differ, one model twice gives zero", "[lammps]") {
  const auto frame = water_frame(0, false);
  for (int np : {1, 2}) {
    const auto dir = make_temp_dir("lammps-devi" + std::to_string(np));
    write_water_model(dir + "/a.pt", 11);
    write_water_model(dir + "/b.pt", 12);
    write_data_file(dir + "/data.lmp", frame);
    const auto r1 = run_lammps(
        dir, std::string(kSetup) + pair_lines("a.pt b.pt out_freq 1 out_file devi.out atomic") + "run 0\n",
        np);
    INFO(r1.output);
    REQUIRE(r1.status == 0);
    const auto r2 = run_lammps(
        dir, std::string(kSetup) + pair_lines("a.pt a.pt out_freq 1 out_file same.out") + "run 0\n", np);
    INFO(r2.output);
    REQUIRE(r2.status == 0);

    // Independent truth: the deviation from direct evaluations of both models.
    const auto fa = direct(dir + "/a.pt", frame), fb = direct(dir + "/b.pt", frame);
    const auto n = static_cast<std::size_t>(frame.natoms());
    std::vector<double> devi(n);
    for (std::size_t i = 0; i < n; ++i) {
      double s = 0;
      for (int d = 0; d < 3; ++d) {
        const double h = 0.5 * (fa.force[3 * i + d] - fb.force[3 * i + d]);
        s += 2 * h * h;
      }
      devi[i] = std::sqrt(s / 2);
    }
    const auto text = read_text(dir + "/devi.out");
    REQUIRE(text.rfind("#       step         max_devi_v", 0) == 0);
    std::stringstream ss(text.substr(text.find('\n') + 1));
    std::vector<double> line;
    for (double v; ss >> v;) line.push_back(v);
    REQUIRE(line.size() == 7 + n);
    CHECK(line[4] == Approx(*std::max_element(devi.begin(), devi.end())).epsilon(1e-8));
    CHECK(line[5] == Approx(*std::min_element(devi.begin(), devi.end())).epsilon(1e-8));
    double avg = 0;
    for (double v : devi) avg += v / static_cast<double>(n);
    CHECK(line[6] == Approx(avg).epsilon(1e-8));
    CHECK(line[4] > 0);
    for (std::size_t i = 0; i < n; ++i) CHECK(line[7 + i] == Approx(devi[i]).epsilon(1e-8));
    double max_v = 0;
    for (int c = 0; c < 9; ++c)
      max_v = std::max(max_v, std::abs(fa.virial[c] - fb.virial[c]) / 2 / static_cast<double>(n));
    CHECK(line[1] == Approx(max_v).epsilon(1e-7));

    // relative 0.5 and relative_v 0.2 (DeePMD-kit's definitions): each atom's deviation over |<F_i>| + 0.5,
    // each virial component's over |<W>| / N + 0.2.
    const auto r3 = run_lammps(
        dir,
        std::string(kSetup) +
            pair_lines("a.pt b.pt out_freq 1 out_file rel.out relative 0.5 relative_v 0.2") + "run 0\n",
        np);
    INFO(r3.output);
    REQUIRE(r3.status == 0);
    const auto rel = read_text(dir + "/rel.out");
    std::stringstream s3(rel.substr(rel.find('\n') + 1));
    std::vector<double> rline;
    for (double v; s3 >> v;) rline.push_back(v);
    REQUIRE(rline.size() == 7);
    double rel_max = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double mean2 = 0;
      for (int d = 0; d < 3; ++d) mean2 += std::pow(0.5 * (fa.force[3 * i + d] + fb.force[3 * i + d]), 2);
      rel_max = std::max(rel_max, devi[i] / (std::sqrt(mean2) + 0.5));
    }
    CHECK(rline[4] == Approx(rel_max).epsilon(1e-8));
    double w2 = 0, rms = 0;
    for (int c = 0; c < 9; ++c) w2 += std::pow(0.5 * (fa.virial[c] + fb.virial[c]), 2);
    const double scale = std::sqrt(w2) / static_cast<double>(n) + 0.2;
    for (int c = 0; c < 9; ++c)
      rms += std::pow(std::abs(fa.virial[c] - fb.virial[c]) / 2 / static_cast<double>(n) / scale, 2) / 9;
    CHECK(rline[1] == Approx(max_v / scale).epsilon(1e-7));
    // avg_devi_v is the root mean square of the 9 components, as DeePMD-kit writes it.
    CHECK(rline[3] == Approx(std::sqrt(rms)).epsilon(1e-7));

    const auto same = read_text(dir + "/same.out");
    std::stringstream s2(same.substr(same.find('\n') + 1));
    std::vector<double> zeros;
    for (double v; s2 >> v;) zeros.push_back(v);
    REQUIRE(zeros.size() == 7);
    for (int k = 1; k < 7; ++k) CHECK(zeros[k] == 0.0);
  }
}

TEST_CASE("input errors give clear LAMMPS errors", "[lammps]") {
  const auto dir = make_temp_dir("lammps-errors");
  write_water_model(dir + "/model.pt", 11);
  write_data_file(dir + "/data.lmp", water_frame(0, false));
  write_data_file(dir + "/three.lmp", water_frame(0, false), {15.9994, 1.00794, 12.011});
  {
    std::ofstream corrupt(dir + "/corrupt.pt");
    corrupt << "not a model";
  }
  {
    // A model whose first weight is nan: it loads, and predicts nan.
    auto loaded = load_model(dir + "/model.pt");
    torch::NoGradGuard no_grad;
    loaded.model->parameters().front().view({-1})[0] = std::nan("");
    save_model(dir + "/nan.pt", loaded.model, loaded.provenance);
  }
  struct Case {
    std::string name, input, expected;
  };
  const std::string run = "run 0\n";
  const std::vector<Case> cases = {
      {"newton off", "newton off\n" + std::string(kSetup) + pair_lines("model.pt") + run,
       "ERROR: pair_style deepkf requires newton pair on"},
      {"unknown element", std::string(kSetup) + "pair_style deepkf model.pt\npair_coeff * * O Si\n" + run,
       "ERROR: pair_coeff deepkf: element Si of atom type 2 is not in model file model.pt (its types: O H)"},
      {"missing model", std::string(kSetup) + pair_lines("nothere.pt") + run,
       "ERROR: pair_style deepkf: nothere.pt is neither a model file (no such file) nor a keyword"},
      {"misspelt keyword", std::string(kSetup) + pair_lines("model.pt model.pt out_frq 10") + run,
       "ERROR: pair_style deepkf: out_frq is neither a model file (no such file) nor a keyword (out_freq, "
       "out_file, atomic, relative, relative_v)"},
      {"corrupt model", std::string(kSetup) + pair_lines("corrupt.pt") + run,
       "ERROR: pair_style deepkf cannot load model file corrupt.pt"},
      {"wrong units",
       "units real\nboundary p p p\natom_style atomic\nread_data data.lmp\n" + pair_lines("model.pt") + run,
       "ERROR: pair_style deepkf requires units metal (eV, Angstrom); this input uses units real"},
      {"non-finite prediction", std::string(kSetup) + pair_lines("nan.pt") + run,
       "pair_style deepkf: model nan.pt predicts a non-finite energy (nan) at timestep 0"},
      // DeePMD-kit's name and syntax (test_DeepmdScripts.cpp): its keywords deepkf models cannot honour, and
      // a bare pair_coeff * * with more atom types than the model has.
      {"DeePMD-kit's fparam",
       std::string(kSetup) + "pair_style deepmd model.pt fparam 1.2\npair_coeff * *\n" + run,
       "ERROR: pair_style deepmd: DeePMD-kit's keyword fparam is not supported"},
      {"DeePMD-kit's ttm", std::string(kSetup) + pair_lines("model.pt ttm 1") + run,
       "ERROR: pair_style deepkf: DeePMD-kit's keyword ttm is not supported"},
      {"relative_v without a level", std::string(kSetup) + pair_lines("model.pt model.pt relative_v") + run,
       "ERROR: illegal pair_style deepkf command: relative_v needs a level"},
      {"bare pair_coeff, more atom types than the model's",
       "units metal\nboundary p p p\natom_style atomic\nread_data three.lmp\npair_style deepmd model.pt\n"
       "pair_coeff * *\n" +
           run,
       "ERROR: pair_coeff deepmd: pair_coeff * * without element names maps atom type t to the model's type "
       "t - 1, "
       "but the input has 3 atom types and model file model.pt 2 (O H)"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const auto r = run_lammps(dir, c.input, 1);
      INFO(r.output);
      CHECK(r.status != 0);
      CHECK(r.output.find(c.expected) != std::string::npos);
      CHECK(r.output.find("Segmentation") == std::string::npos);
    }
  }
}

TEST_CASE("a compressed model warns once when atoms come closer than its tables reach", "[lammps]") {
  const auto dir = make_temp_dir("lammps-beyond");
  write_water_model(dir + "/model.pt", 11);
  {
    // no training range in this file: the tables cover s up to s(0.5 A), with extrapolate 1 no further
    auto loaded = load_model(dir + "/model.pt");
    TableSettings s;
    s.extrapolate = 1.0;
    loaded.model->compress(s);
    save_model(dir + "/compressed.pt", loaded.model, loaded.provenance);
  }
  auto frame = water_frame(0, false);
  // move an H atom (the second atom of a molecule) to 0.4 A of another atom's position
  for (int d = 0; d < 3; ++d) frame.coord[3 * 1 + d] = frame.coord[3 * 0 + d] + (d == 0 ? 0.4 : 0.0);
  write_data_file(dir + "/data.lmp", frame);
  const auto r = run_lammps(dir, std::string(kSetup) + pair_lines("compressed.pt") + "run 2\n", 2);
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::size_t count = 0;
  for (auto at = r.output.find("lie beyond the tables"); at != std::string::npos;
       at = r.output.find("lie beyond the tables", at + 1))
    ++count;
  CHECK(count == 1);
  CHECK(r.output.find("2 neighbour slots at timestep 0") != std::string::npos);
}
