// pair_style deepkf's force computation: pack the atoms, evaluate the models, check their predictions, tally
// the driving model's forces, energies and virials, and the ensemble's deviation on its steps.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "atom.h"
#include "lammps_plugin/PairDeepkf.hpp"
#include "lammps_plugin/PairDeepkfImpl.hpp"
#include "neigh_list.h"
#include "update.h"

namespace LAMMPS_NS {

void PairDeepkf::compute(int eflag, int vflag) {
  ev_init(eflag, vflag);
  auto& im = *impl_;
  const int inum = list->inum;
  const int* ilist = list->ilist;
  const std::size_t nmodels = im.models.size();
  const bool deviation = nmodels > 1 && out_freq_ > 0 && update->ntimestep % out_freq_ == 0;
  const int nall = atom->nlocal + atom->nghost;
  im.pack(inum, ilist, list->numneigh, list->firstneigh, nall, atom->type, atom->x);
  const std::size_t npacked = im.lammps_of.size();

  const bool need_atom_virial = vflag_atom || cvflag_atom;
  if (deviation) im.ensemble_force.assign(static_cast<std::size_t>(nall) * nmodels * 3, 0.0);
  std::vector<double> model_virials(9 * nmodels, 0.0);
  long long beyond_table = 0;  // this rank's slots beyond the driving model's tables
  for (std::size_t m = 0; m < (deviation ? nmodels : 1); ++m) {
    if (inum == 0) continue;  // a rank without centres has no energy and exerts no force
    deepkf::PotentialResult out;
    const auto message = guarded([&] { out = im.evaluate(m, atom->type, m == 0 && need_atom_virial); });
    if (!message.empty())
      fail_on_this_rank(ps() + ": evaluating model " + im.models[m].path() + " failed: " + message);
    check_prediction(out, m);
    std::copy(out.virial.begin(), out.virial.end(), model_virials.begin() + 9 * m);
    if (deviation) {
      for (std::size_t k = 0; k < npacked; ++k) {
        double* dst =
            im.ensemble_force.data() + (static_cast<std::size_t>(im.lammps_of[k]) * nmodels + m) * 3;
        for (int d = 0; d < 3; ++d) dst[d] += out.force[3 * k + d];
      }
    }
    if (m != 0) continue;
    beyond_table = out.beyond_table;
    tally(out, inum, ilist);  // the first model drives the dynamics
  }

  if (im.models.front().potential.loaded().model->compressed() && !im.warned_beyond_table)
    warn_beyond_table(beyond_table);
  if (deviation) write_deviation(inum, ilist, model_virials);
}

// A non-finite energy or force would run on as nan coordinates: stop at the step that made it.
void PairDeepkf::check_prediction(const deepkf::PotentialResult& out, std::size_t m) {
  std::string bad;
  const double energy = out.energy.at(0);
  if (!std::isfinite(energy))
    bad = std::string("energy (") + (std::isnan(energy) ? "nan" : energy > 0 ? "inf" : "-inf") + ")";
  const auto& lammps_of = impl_->lammps_of;
  for (std::size_t k = 0; bad.empty() && k < lammps_of.size(); ++k) {
    if (!(std::isfinite(out.force[3 * k]) && std::isfinite(out.force[3 * k + 1]) &&
          std::isfinite(out.force[3 * k + 2])))
      bad = "force on atom ID " + std::to_string(atom->tag[lammps_of[k]]);
  }
  if (!bad.empty())
    fail_on_this_rank(ps() + ": model " + impl_->models[m].path() + " predicts a non-finite " + bad +
                      " at timestep " + std::to_string(update->ntimestep) +
                      "; atoms may overlap or have left the range the model was trained on");
}

void PairDeepkf::tally(const deepkf::PotentialResult& out, int inum, const int* ilist) {
  const auto& lammps_of = impl_->lammps_of;
  const std::size_t npacked = lammps_of.size();
  double** f = atom->f;
  for (std::size_t k = 0; k < npacked; ++k) {
    double* fi = f[lammps_of[k]];
    for (int d = 0; d < 3; ++d) fi[d] += out.force[3 * k + d];
  }
  if (eflag_global) eng_vdwl += out.energy.at(0);
  if (eflag_atom) {
    for (int ii = 0; ii < inum; ++ii) eatom[ilist[ii]] += out.atom_energy[ii];
  }
  // LAMMPS orders the virial xx yy zz xy xz yz with xy = sum r_x f_y = W_yx (W_ab = sum F_a r_b).
  const auto& w = out.virial;
  if (vflag_global) {
    virial[0] += w[0];
    virial[1] += w[4];
    virial[2] += w[8];
    virial[3] += w[3];
    virial[4] += w[6];
    virial[5] += w[7];
  }
  if (vflag_atom) {
    // Symmetric per-atom virial: xy = (W_xy + W_yx) / 2.
    for (std::size_t k = 0; k < npacked; ++k) {
      const double* a = out.atom_virial.data() + 9 * k;
      double* v = vatom[lammps_of[k]];
      v[0] += a[0];
      v[1] += a[4];
      v[2] += a[8];
      v[3] += 0.5 * (a[1] + a[3]);
      v[4] += 0.5 * (a[2] + a[6]);
      v[5] += 0.5 * (a[5] + a[7]);
    }
  }
  if (cvflag_atom) {
    // Centroid virial, 9 components xx yy zz xy xz yz yx zx zy, with xy = r_x f_y = W_yx.
    for (std::size_t k = 0; k < npacked; ++k) {
      const double* a = out.atom_virial.data() + 9 * k;
      double* v = cvatom[lammps_of[k]];
      v[0] += a[0];
      v[1] += a[4];
      v[2] += a[8];
      v[3] += a[3];
      v[4] += a[6];
      v[5] += a[7];
      v[6] += a[1];
      v[7] += a[2];
      v[8] += a[5];
    }
  }
}

}  // namespace LAMMPS_NS
