// The packed atoms of a step, and one model's energy, forces and virial for them (PairDeepkfImpl.hpp).
#include "lammps_plugin/PairDeepkfImpl.hpp"

#include <algorithm>

#include "lmptype.h"
#include "src/geometry/NeighborList.hpp"
#include "src/model/Batch.hpp"

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
  auto& model = models[m];
  const auto& config = model.loaded.config;
  const auto npacked = static_cast<std::int64_t>(lammps_of.size());
  std::vector<int> types(static_cast<std::size_t>(npacked));
  std::vector<std::int64_t> types64(types.size());
  for (std::int64_t k = 0; k < npacked; ++k) {
    types[k] = model.type_of[lammps_type[lammps_of[k]]];
    types64[k] = types[k];
  }
  const auto in_list = deepkf::list_types(config, types);  // all 0 for a mixed-type descriptor
  const auto nl = deepkf::sort_neighbors(x.data(), in_list.data(), ncentre, offset.data(), neigh.data(),
                                         config.rcut, config.sel);
  const auto on = model.device;
  const auto dtype = torch::TensorOptions().dtype(config.precision).device(on);
  const auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
  const auto cpu_long = torch::TensorOptions().dtype(torch::kInt64);
  // coord: 1 x npacked x 3 (A); atype: 1 x npacked; nlist: 1 x ncentre x nnei
  const auto coord =
      torch::from_blob(const_cast<double*>(x.data()), {1, npacked, 3}, cpu64).to(dtype, false, true);
  const auto atype = torch::from_blob(types64.data(), {1, npacked}, cpu_long).to(on, false, true);
  const auto nlist =
      torch::from_blob(const_cast<std::int64_t*>(nl.index.data()), {1, ncentre, nl.nnei}, cpu_long)
          .to(on, false, true);
  auto result = model.loaded.model->evaluate(coord, atype, nlist, torch::Tensor(),
                                             deepkf::EvalOptions::with_atom_virial(need_atom_virial));

  Output out;
  const auto to_vector = [](const torch::Tensor& t) {
    const auto c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  out.energy = result.energy.to(torch::kCPU, torch::kFloat64).item<double>();
  out.atom_energy = to_vector(result.atom_energy);
  out.force = to_vector(result.force);
  const auto w = to_vector(result.virial);
  std::copy(w.begin(), w.end(), out.virial.begin());
  if (need_atom_virial) out.atom_virial = to_vector(result.atom_virial);
  out.beyond_table = result.beyond_table;
  return out;
}

}  // namespace LAMMPS_NS
