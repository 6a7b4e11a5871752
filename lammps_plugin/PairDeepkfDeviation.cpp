// pair_style deepkf's model deviation: every model's forces summed onto the atoms' owners, the per-atom force
// deviation of DeePMD-kit's model_devi.out and its extremes over all ranks, written by rank 0.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <utility>

#include "atom.h"
#include "comm.h"
#include "lammps_plugin/PairDeepkfImpl.hpp"
#include "src/model/ModelDeviation.hpp"
#include "update.h"

namespace LAMMPS_NS {

namespace {
constexpr double kNoRelative = -1.0;
}

void PairDeepkf::write_deviation(int inum, const int* ilist, const std::vector<double>& model_virials) {
  auto& im = *impl_;
  const std::size_t nmodels = im.models.size();
  // Forces on ghost atoms to their owners, for every model.
  comm->reverse_comm_pair(this);

  // Per-atom deviation of this rank's centres (local atoms).
  std::vector<double> local_forces(static_cast<std::size_t>(inum) * nmodels * 3);
  for (int ii = 0; ii < inum; ++ii) {
    std::copy_n(im.ensemble_force.data() + static_cast<std::size_t>(ilist[ii]) * nmodels * 3, nmodels * 3,
                local_forces.data() + static_cast<std::size_t>(ii) * nmodels * 3);
  }
  const auto devi = deepkf::force_deviation(local_forces.data(), static_cast<std::size_t>(inum), nmodels,
                                            relative_ ? relative_level_ : kNoRelative);

  // Extremes over this rank's atoms, then over all ranks (src/model/ModelDeviation.hpp).
  deepkf::DeviationExtremes local, all;
  local.add(devi);
  MPI_Reduce(&local.max, &all.max, 1, MPI_DOUBLE, MPI_MAX, 0, world);
  MPI_Reduce(&local.min, &all.min, 1, MPI_DOUBLE, MPI_MIN, 0, world);
  MPI_Reduce(&local.sum, &all.sum, 1, MPI_DOUBLE, MPI_SUM, 0, world);
  MPI_Reduce(&local.count, &all.count, 1, MPI_DOUBLE, MPI_SUM, 0, world);
  std::vector<double> total_virials(model_virials.size(), 0.0);
  MPI_Reduce(model_virials.data(), total_virials.data(), static_cast<int>(model_virials.size()), MPI_DOUBLE,
             MPI_SUM, 0, world);

  // Per-atom values in atom-ID order on rank 0 (keyword atomic).
  std::vector<double> all_devi;
  if (atomic_) {
    const int me = comm->me, nprocs = comm->nprocs;
    std::vector<double> pairs(2 * static_cast<std::size_t>(inum));  // (atom ID, deviation)
    for (int ii = 0; ii < inum; ++ii) {
      pairs[2 * ii] = static_cast<double>(atom->tag[ilist[ii]]);
      pairs[2 * ii + 1] = devi[ii];
    }
    const int count = 2 * inum;
    std::vector<int> counts(static_cast<std::size_t>(nprocs)), displs(static_cast<std::size_t>(nprocs));
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world);
    std::vector<double> gathered;
    if (me == 0) {
      std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
      gathered.resize(static_cast<std::size_t>(displs.back() + counts.back()));
    }
    MPI_Gatherv(pairs.data(), count, MPI_DOUBLE, gathered.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
                world);
    if (me == 0) {
      std::vector<std::pair<double, double>> by_id(gathered.size() / 2);
      for (std::size_t k = 0; k < by_id.size(); ++k) by_id[k] = {gathered[2 * k], gathered[2 * k + 1]};
      std::sort(by_id.begin(), by_id.end());
      for (const auto& p : by_id) all_devi.push_back(p.second);
    }
  }

  if (comm->me != 0 || out_ == nullptr) return;
  const auto row =
      deepkf::deviation_row(all, deepkf::virial_deviation(total_virials.data(), nmodels, all.count,
                                                          relative_v_ ? relative_v_level_ : kNoRelative));
  FILE* fp = static_cast<FILE*>(out_);
  std::fprintf(fp, "%12lld %18.10e %18.10e %18.10e %18.10e %18.10e %18.10e",
               static_cast<long long>(update->ntimestep), row.max_devi_v, row.min_devi_v, row.avg_devi_v,
               row.max_devi_f, row.min_devi_f, row.avg_devi_f);
  for (double e : all_devi) std::fprintf(fp, " %18.10e", e);
  std::fprintf(fp, "\n");
  std::fflush(fp);
}

int PairDeepkf::pack_reverse_comm(int n, int first, double* buf) {
  const std::size_t width = 3 * impl_->models.size();
  int m = 0;
  for (int i = first; i < first + n; ++i) {
    const double* src = impl_->ensemble_force.data() + static_cast<std::size_t>(i) * width;
    for (std::size_t c = 0; c < width; ++c) buf[m++] = src[c];
  }
  return m;
}

void PairDeepkf::unpack_reverse_comm(int n, int* send_list, double* buf) {
  const std::size_t width = 3 * impl_->models.size();
  int m = 0;
  for (int i = 0; i < n; ++i) {
    double* dst = impl_->ensemble_force.data() + static_cast<std::size_t>(send_list[i]) * width;
    for (std::size_t c = 0; c < width; ++c) dst[c] += buf[m++];
  }
}

}  // namespace LAMMPS_NS
