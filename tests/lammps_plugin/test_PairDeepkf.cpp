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
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

constexpr double kNktv2pMetal = 1.6021765e6;  // LAMMPS metal units: eV/A^3 -> bar

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Largest |a - b| relative to max |b|.
double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t k = 0; k < a.size(); ++k) m = std::max(m, std::abs(a[k] - b[k]));
  return m / std::max(max_abs(b), 1e-300);
}

const char* const kSetup = kReadDataSetup;

std::string pair_lines(const std::string& style_args) {
  return "pair_style deepkf " + style_args + "\npair_coeff * * O H\n";
}

// run 0 with dumps of forces, per-atom energy and (centroid) per-atom virial, thermo pe and virial.
std::string run0_input(const std::string& style_args) {
  return std::string(kSetup) + pair_lines(style_args) + R"(
compute pe all pe/atom
compute st all stress/atom NULL virial
compute cs all centroid/stress/atom NULL virial
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[1] c_vir[2] c_vir[3] c_vir[4] c_vir[5] c_vir[6] vol
thermo_modify format float %.17g
dump d all custom 1 dump.txt id type fx fy fz c_pe c_st[1] c_st[2] c_st[3] c_st[4] c_st[5] c_st[6] &
  c_cs[1] c_cs[2] c_cs[3] c_cs[4] c_cs[5] c_cs[6] c_cs[7] c_cs[8] c_cs[9]
dump_modify d sort id format float %.17g
run 0
)";
}

// With `compressed`, the model is compressed (deepkf compress defaults) before both evaluations.
void check_run0(const Frame& frame, int np, bool compressed = false,
                const std::string& descriptor = "se_e2_a") {
  const auto dir = make_temp_dir("lammps-run0");
  write_water_model(dir + "/model.pt", 11, descriptor);
  if (compressed) {
    write_compressed_model(dir + "/model.pt", dir + "/compressed.pt");
    std::filesystem::rename(dir + "/compressed.pt", dir + "/model.pt");
  }
  write_data_file(dir + "/data.lmp", frame);
  const auto r = run_lammps(dir, run0_input("model.pt"), np);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto ref = direct(dir + "/model.pt", frame);
  const auto n = static_cast<std::size_t>(frame.natoms());

  const auto thermo = thermo_rows(read_text(dir + "/log.lammps"), 9);
  REQUIRE(thermo.size() >= 1);
  const auto& t = thermo.front();
  CHECK(t[1] == Approx(ref.energy).epsilon(1e-8));
  // pressure virial p_k = W_k nktv2p / V, LAMMPS order xx yy zz xy xz yz with xy = sum r_x f_y = W_yx
  const double vol = t[8];
  const int from_model[6] = {0, 4, 8, 3, 6, 7};
  std::vector<double> w_lmp(6), w_ref(6);
  for (int k = 0; k < 6; ++k) {
    w_lmp[k] = t[2 + k] * vol / kNktv2pMetal;
    w_ref[k] = ref.virial[from_model[k]];
  }
  CHECK(rel_diff(w_lmp, w_ref) < 1e-8);

  const auto rows = read_last_dump(dir + "/dump.txt");
  REQUIRE(rows.size() == n);
  std::vector<double> f(3 * n), e(n), st(6 * n), st_ref(6 * n), cs(9 * n), cs_ref(9 * n);
  const int centroid_from_model[9] = {0, 4, 8, 3, 6, 7, 1, 2, 5};
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(rows[i].size() == 21);
    REQUIRE(rows[i][0] == static_cast<double>(i + 1));
    for (int d = 0; d < 3; ++d) f[3 * i + d] = rows[i][2 + d];
    e[i] = rows[i][5];
    const double* a = ref.atom_virial.data() + 9 * i;
    // stress/atom = -nktv2p * (symmetric per-atom virial)
    const double sym[6] = {a[0], a[4], a[8], 0.5 * (a[1] + a[3]), 0.5 * (a[2] + a[6]), 0.5 * (a[5] + a[7])};
    for (int k = 0; k < 6; ++k) {
      st[6 * i + k] = -rows[i][6 + k] / kNktv2pMetal;
      st_ref[6 * i + k] = sym[k];
    }
    for (int k = 0; k < 9; ++k) {
      cs[9 * i + k] = -rows[i][12 + k] / kNktv2pMetal;
      cs_ref[9 * i + k] = a[centroid_from_model[k]];
    }
  }
  CHECK(rel_diff(f, ref.force) < 1e-8);
  CHECK(rel_diff(e, ref.atom_energy) < 1e-8);
  CHECK(rel_diff(st, st_ref) < 1e-8);
  CHECK(rel_diff(cs, cs_ref) < 1e-8);
}

// Final positions of `steps` NVE steps from the frame at `np` ranks.
std::vector<std::vector<double>> trajectory_end(const std::string& dir, int np, int steps,
                                                const std::string& extra = "") {
  std::ostringstream in;
  in << extra << kSetup << pair_lines("model.pt")
     << "velocity all create 300 4928 mom yes rot yes dist gaussian loop geom\n"
     << "timestep 0.0005\nfix 1 all nve\nthermo 50\n"
     << "dump d all custom " << steps << " traj.txt id x y z vx vy vz\n"
     << "dump_modify d sort id format float %.17g\nrun " << steps << "\n";
  const auto r = run_lammps(dir, in.str(), np);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return read_last_dump(dir + "/traj.txt");
}

double max_row_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].size() == b[i].size());
    for (std::size_t k = 0; k < a[i].size(); ++k) m = std::max(m, std::abs(a[i][k] - b[i][k]));
  }
  return m;
}

}  // namespace

TEST_CASE("run 0 energies, forces and virials equal the direct evaluation", "[lammps]") {
  SECTION("orthorhombic water frame, 1 rank") { check_run0(water_frame(0, false), 1); }
  SECTION("orthorhombic water frame, 2 ranks") { check_run0(water_frame(3, false), 2); }
  SECTION("triclinic water frame, 1 rank") { check_run0(water_frame(1, true), 1); }
  SECTION("triclinic water frame, 4 ranks") { check_run0(water_frame(2, true), 4); }
  SECTION("compressed model, orthorhombic water frame, 1 rank") {
    check_run0(water_frame(0, false), 1, true);
  }
  SECTION("compressed model, triclinic water frame, 4 ranks") { check_run0(water_frame(2, true), 4, true); }
  SECTION("se_e2_r model, triclinic water frame, 1 rank") {
    check_run0(water_frame(1, true), 1, false, "se_e2_r");
  }
  SECTION("se_e2_r model, triclinic water frame, 2 ranks") {
    check_run0(water_frame(2, true), 2, false, "se_e2_r");
  }
  SECTION("compressed se_e2_r model, orthorhombic water frame, 2 ranks") {
    check_run0(water_frame(0, false), 2, true, "se_e2_r");
  }
}

TEST_CASE("an se_e2_r model gives the same 100 MD steps on 1 and 2 ranks", "[lammps]") {
  const auto frame = water_frame(0, false);
  std::vector<std::vector<std::vector<double>>> ends;
  for (int np : {1, 2}) {
    const auto dir = make_temp_dir("lammps-se-e2-r-np" + std::to_string(np));
    write_water_model(dir + "/model.pt", 11, "se_e2_r");
    write_data_file(dir + "/data.lmp", frame);
    ends.push_back(trajectory_end(dir, np, 100));
  }
  CHECK(max_row_diff(ends[0], ends[1]) < 1e-7);
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
