#include "src/learn/LammpsInput.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {
namespace {

double dot(const double* u, const double* v) { return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]; }

// The cell rotated so that a lies along x and b in the xy plane, tilts not reduced: rows
// (lx, 0, 0), (xy, ly, 0), (xz, yz, lz). Fractional coordinates are the same in it as in box9.
LammpsBox rotated(const double* box9, const std::string& where) {
  const auto r = lammps_rotation(box9, where);
  const double* a = box9;
  const double* b = box9 + 3;
  const double* c = box9 + 6;
  LammpsBox box;
  box.lx = dot(a, r.data());
  box.xy = dot(b, r.data());
  box.ly = dot(b, r.data() + 3);
  box.xz = dot(c, r.data());
  box.yz = dot(c, r.data() + 3);
  box.lz = dot(c, r.data() + 6);
  return box;
}

}  // namespace

std::array<double, 9> lammps_rotation(const double* box9, const std::string& where) {
  Cell::validate(box9, where);  // finite, not singular, right-handed
  const double* a = box9;
  const double* b = box9 + 3;
  // u = a / |a|; v: the unit vector of b's part normal to u; w = u x v (c.w > 0 for a right-handed cell).
  const double la = std::sqrt(dot(a, a));
  const double u[3] = {a[0] / la, a[1] / la, a[2] / la};
  const double bu = dot(b, u);
  double v[3] = {b[0] - bu * u[0], b[1] - bu * u[1], b[2] - bu * u[2]};
  const double lv = std::sqrt(dot(v, v));
  for (double& x : v) x /= lv;
  const double w[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  return {u[0], u[1], u[2], v[0], v[1], v[2], w[0], w[1], w[2]};
}

LammpsBox lammps_box(const double* box9, const std::string& where) {
  LammpsBox box = rotated(box9, where);
  // Reduce the tilts (LAMMPS refuses |tilt| > l/2 without `box tilt large`): c -= k b, c -= m a, b -= n a.
  const double k = std::round(box.yz / box.ly);
  box.yz -= k * box.ly;
  box.xz -= k * box.xy;
  box.xz -= std::round(box.xz / box.lx) * box.lx;
  box.xy -= std::round(box.xy / box.lx) * box.lx;
  // Exact zeros for an orthogonal cell, so that LAMMPS gets an orthogonal box.
  for (double* t : {&box.xy, &box.xz, &box.yz})
    if (std::abs(*t) < 1e-12 * box.lx) *t = 0.0;
  return box;
}

std::string lammps_data_text(const System& system, std::int64_t frame, const std::vector<double>& masses) {
  const std::string where = fmt::format("box of {} frame {}", system.source, frame);
  if (!system.periodic || system.box.empty())
    throw DataError(
        fmt::format("{} is not periodic: an exploration run needs a periodic cell", system.source));
  const double* box9 = system.box.data() + 9 * frame;
  const LammpsBox box = lammps_box(box9, where);
  const Cell original(box9);
  const auto unreduced = rotated(box9, where).rows();
  const Cell turned(unreduced.data());  // same fractional coordinates as `original`
  const auto rows = box.rows();
  const Cell lammps(rows.data());  // same lattice as `turned`
  std::string out = fmt::format("deepkf learn start structure: {} frame {}\n\n{} atoms\n{} atom types\n\n",
                                system.source, frame, system.natoms, system.type_map.size());
  out += fmt::format("0 {:.15g} xlo xhi\n0 {:.15g} ylo yhi\n0 {:.15g} zlo zhi\n", box.lx, box.ly, box.lz);
  if (box.triclinic()) out += fmt::format("{:.15g} {:.15g} {:.15g} xy xz yz\n", box.xy, box.xz, box.yz);
  out += "\nMasses\n\n";
  for (std::size_t t = 0; t < system.type_map.size(); ++t)
    out += fmt::format("{} {:.10g}  # {}\n", t + 1, masses.at(t), system.type_map[t]);
  out += "\nAtoms # atomic\n\n";
  for (std::int64_t i = 0; i < system.natoms; ++i) {
    // x' = f H_turned: the rotated position; wrap() moves it by a lattice vector into the reduced cell.
    double x[3];
    original.to_fractional(system.coord.data() + 3 * (frame * system.natoms + i), x);
    turned.to_cartesian(x, x);
    lammps.wrap(x);
    out += fmt::format("{} {} {:.15g} {:.15g} {:.15g}\n", i + 1,
                       system.atom_types[static_cast<std::size_t>(i)] + 1, x[0], x[1], x[2]);
  }
  return out;
}

std::string lammps_input_text(const MdRun& run) {
  std::string models;
  for (const auto& m : run.models) models += " \"" + m + "\"";
  std::string out = fmt::format("# deepkf learn: {} at {:g} K{}\n", run.ensemble, run.temperature,
                                run.ensemble == "npt" ? fmt::format(", {:g} bar", run.pressure) : "");
  out += fmt::format("plugin load \"{}\"\n", run.plugin);
  out += "units metal\nboundary p p p\natom_style atomic\natom_modify map array\n";
  out += fmt::format("read_data {}\n", run.data_file);
  if (run.replicate != std::array<int, 3>{1, 1, 1})
    out += fmt::format("replicate {} {} {}\n", run.replicate[0], run.replicate[1], run.replicate[2]);
  out += fmt::format("pair_style deepkf{}", models);
  if (run.models.size() > 1) out += fmt::format(" out_freq {} out_file {}", run.dump_freq, kDeviationFile);
  out += fmt::format("\npair_coeff * * {}\n", fmt::join(run.elements, " "));
  out += fmt::format("velocity all create {:g} {} mom yes rot yes dist gaussian\n", run.temperature,
                     run.velocity_seed);
  if (run.ensemble == "npt") {
    if (run.barostat == "tri") out += "change_box all triclinic\n";
    out += fmt::format("fix md all npt temp {0:g} {0:g} {1:g} {2} {3:g} {3:g} {4:g}\n", run.temperature,
                       run.thermostat_damping, run.barostat, run.pressure, run.barostat_damping);
  } else {
    out += fmt::format("fix md all nvt temp {0:g} {0:g} {1:g}\n", run.temperature, run.thermostat_damping);
  }
  out += fmt::format("timestep {:g}\n", run.timestep);
  out += fmt::format("thermo_style custom step temp pe press vol\nthermo {}\n", run.dump_freq);
  out += fmt::format("dump traj all custom {} {} id type x y z\n", run.dump_freq, kTrajectoryFile);
  out += "dump_modify traj sort id format float %.12g\n";
  out += fmt::format("run {}\n", run.steps);
  return out;
}

}  // namespace deepkf
