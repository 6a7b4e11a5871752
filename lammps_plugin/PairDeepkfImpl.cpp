// The packed atoms of a step, and one model's energy, forces and virial for them (PairDeepkfImpl.hpp).
#include "lammps_plugin/PairDeepkfImpl.hpp"

#include <algorithm>

#include "lmptype.h"

namespace LAMMPS_NS {

void PairDeepkf::Impl::pack(int inum, const int* ilist, const int* numneigh, int** firstneigh, int nall,
                            const int* type, double** x_lammps) {
  const auto& type_of = models.front().type_of;
  packed_of.assign(static_cast<std::size_t>(nall), -1);
  lammps_of.clear();
  for (int ii = 0; ii < inum; ++ii) {
    packed_of[ilist[ii]] = ii;
    lammps_of.push_back(ilist[ii]);
  }
  for (int i = 0; i < nall; ++i) {
    if (packed_of[i] < 0 && type_of[type[i]] >= 0) {
      packed_of[i] = static_cast<int>(lammps_of.size());
      lammps_of.push_back(i);
    }
  }
  const std::size_t npacked = lammps_of.size();
  x.resize(3 * npacked);
  for (std::size_t k = 0; k < npacked; ++k) {
    for (int d = 0; d < 3; ++d) x[3 * k + d] = x_lammps[lammps_of[k]][d];
  }
  ncentre = inum;
  offset.assign(1, 0);
  neigh.clear();
  for (int ii = 0; ii < inum; ++ii) {
    const int i = ilist[ii];
    for (int jj = 0; jj < numneigh[i]; ++jj) {
      const int p = packed_of[firstneigh[i][jj] & NEIGHMASK];
      if (p >= 0) neigh.push_back(p);
    }
    offset.push_back(static_cast<std::int64_t>(neigh.size()));
  }
}

PairDeepkf::Impl::Output PairDeepkf::Impl::evaluate(std::size_t m, const int* lammps_type,
                                                    bool need_atom_virial) {
  const auto& model = models[m];
  std::vector<int> types(lammps_of.size());
  for (std::size_t k = 0; k < types.size(); ++k) types[k] = model.type_of[lammps_type[lammps_of[k]]];
  deepkf::NeighbourAtoms atoms;
  atoms.natoms = static_cast<std::int64_t>(lammps_of.size());
  atoms.ncentre = ncentre;
  atoms.coord = x.data();
  atoms.types = types.data();
  atoms.offset = offset.data();
  atoms.neigh = neigh.data();
  deepkf::PotentialOptions options;
  options.atomic = need_atom_virial;
  return model.potential.evaluate(atoms, options);
}

}  // namespace LAMMPS_NS
