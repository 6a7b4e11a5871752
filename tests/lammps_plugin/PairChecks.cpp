#include "tests/lammps_plugin/PairChecks.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "tests/lammps_plugin/LammpsRunner.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

namespace deepkf::test {

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
void check_run0(const Frame& frame, int np, bool compressed, const std::string& descriptor) {
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
                                                const std::string& extra) {
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

}  // namespace deepkf::test
