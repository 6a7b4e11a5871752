#include "lammps_plugin/PairDeepkf.hpp"

#include <ATen/Parallel.h>
#include <mpi.h>
#include <sys/stat.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <utility>

#include "atom.h"
#include "comm.h"
#include "domain.h"
#include "error.h"
#include "force.h"
#include "lammps_plugin/PairDeepkfImpl.hpp"
#include "memory.h"
#include "neigh_list.h"
#include "neigh_request.h"
#include "neighbor.h"
#include "src/core/Cores.hpp"
#include "src/core/Error.hpp"
#include "src/core/OpenMpWait.hpp"
#include "src/geometry/NeighborList.hpp"
#include "src/model/CpuMemoryCache.hpp"
#include "src/model/ModelDeviation.hpp"
#include "src/model/ModelFile.hpp"
#include "update.h"
#include "utils.h"

namespace LAMMPS_NS {

namespace {

// Keywords of DeePMD-kit's pair_style deepmd that deepkf does not have: refused by name, not taken for a
// model file.
bool is_deepmd_keyword(const std::string& a) {
  static const char* const kKeywords[] = {
      "fparam", "aparam", "fparam_from_compute", "aparam_from_compute", "ttm", "virtual_len", "spin_norm"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), a) != std::end(kKeywords);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

}  // namespace

PairDeepkf::PairDeepkf(LAMMPS* lammps, std::string style)
    : Pair(lammps), style_(std::move(style)), impl_(std::make_unique<Impl>()) {
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  // The model gives the virial and the per-atom (centroid) virial directly.
  no_virial_fdotr_compute = 1;
  centroidstressflag = CENTROID_AVAIL;
  // LibTorch's products on the calling thread unless OPENBLAS_NUM_THREADS says otherwise: OpenBLAS's pthreads
  // pool would otherwise start one thread per core in every rank (src/core/OpenMpWait.hpp).
  deepkf::single_threaded_blas();
  // Freed tensor memory kept for the next step instead of unmapped and faulted in again (CpuMemoryCache.hpp).
  deepkf::use_cpu_memory_cache();
}

PairDeepkf::~PairDeepkf() {
  if (out_ != nullptr) std::fclose(static_cast<FILE*>(out_));
  if (allocated) {
    memory->destroy(setflag);
    memory->destroy(cutsq);
  }
}

const char* PairDeepkf::deviation_header() {
  return "#       step         max_devi_v         min_devi_v         avg_devi_v         max_devi_f"
         "         min_devi_f         avg_devi_f";
}

void PairDeepkf::allocate() {
  allocated = 1;
  const int n = atom->ntypes;
  memory->create(setflag, n + 1, n + 1, "pair:setflag");
  memory->create(cutsq, n + 1, n + 1, "pair:cutsq");
  for (int i = 0; i <= n; ++i) {
    for (int j = 0; j <= n; ++j) setflag[i][j] = 0;
  }
}

// pair_style deepkf MODEL [MODEL2 ...] [out_freq N] [out_file FILE] [atomic] [relative L] [relative_v L]
void PairDeepkf::settings(int narg, char** arg) {
  parse_settings(narg, arg);
  choose_device_and_threads();
  load_models();
  open_deviation_file();
}

void PairDeepkf::parse_settings(int narg, char** arg) {
  if (narg < 1) error->all(FLERR, "illegal " + ps() + " command: expected at least one model file");
  model_paths_.clear();
  out_freq_ = 0;
  out_file_ = "model_devi.out";
  atomic_ = false;
  relative_ = false;
  relative_level_ = 0.0;
  relative_v_ = false;
  relative_v_level_ = 0.0;
  bool out_freq_given = false;
  // relative L, relative_v L: a level > 0 after the keyword.
  const auto level = [&](int& i, const std::string& key, const char* unit) {
    if (i + 1 >= narg) error->all(FLERR, "illegal " + ps() + " command: " + key + " needs a level");
    const double l = utils::numeric(FLERR, arg[++i], false, lmp);
    if (l <= 0.0)
      error->all(FLERR, ps() + ": " + key + " level must be > 0 (" + unit + "), got " + std::string(arg[i]));
    return l;
  };
  for (int i = 0; i < narg; ++i) {
    const std::string a = arg[i];
    if (a == "out_freq") {
      if (i + 1 >= narg) error->all(FLERR, "illegal " + ps() + " command: out_freq needs a value");
      out_freq_ = utils::inumeric(FLERR, arg[++i], false, lmp);
      if (out_freq_ < 1) error->all(FLERR, ps() + ": out_freq must be >= 1, got " + std::string(arg[i]));
      out_freq_given = true;
    } else if (a == "out_file") {
      if (i + 1 >= narg) error->all(FLERR, "illegal " + ps() + " command: out_file needs a file name");
      out_file_ = arg[++i];
    } else if (a == "atomic") {
      atomic_ = true;
    } else if (a == "relative") {
      relative_ = true;
      relative_level_ = level(i, a, "eV/A");
    } else if (a == "relative_v") {
      relative_v_ = true;
      relative_v_level_ = level(i, a, "eV/atom");
    } else if (is_deepmd_keyword(a)) {
      error->all(FLERR, ps() + ": DeePMD-kit's keyword " + a +
                            " is not supported (deepkf models have no frame or atomic parameters, spins or "
                            "TTM coupling); supported: out_freq, out_file, atomic, relative, relative_v");
    } else {
      // Not a keyword: a model file, which must be there (a misspelt keyword is no model file).
      struct stat st {};
      if (::stat(a.c_str(), &st) != 0) {
        error->all(FLERR, ps() + ": " + a +
                              " is neither a model file (no such file) nor a keyword (out_freq, out_file, "
                              "atomic, relative, relative_v)");
      }
      model_paths_.push_back(a);
    }
  }
  if (model_paths_.empty()) error->all(FLERR, "illegal " + ps() + " command: no model file given");
  if (model_paths_.size() > 1 && !out_freq_given) out_freq_ = 100;
}

void PairDeepkf::choose_device_and_threads() {
  // The GPU of this node-local rank when LibTorch sees one; else the CPU.
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, comm->me, MPI_INFO_NULL, &node);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  impl_->device = torch::kCPU;
  if (torch::cuda::is_available()) {
    const auto count = static_cast<int>(torch::cuda::device_count());
    impl_->device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(node_rank % count));
  }
  // LibTorch's CPU threads: DeePMD-kit's DP_INTRA_OP_PARALLELISM_THREADS when set, OMP_NUM_THREADS (which
  // LibTorch reads itself) when set, else this rank's share of the node's cores; without a share, each of
  // 16 ranks on 16 cores would start 16 threads.
  const char* intra = std::getenv("DP_INTRA_OP_PARALLELISM_THREADS");
  if (intra != nullptr && std::atoi(intra) > 0) {
    at::set_num_threads(std::atoi(intra));
  } else if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    at::set_num_threads(deepkf::threads_per_rank(node_size));
  }
}

void PairDeepkf::load_models() {
  impl_->models.clear();
  cutoff_ = 0.0;
  for (const auto& path : model_paths_) {
    const auto message = guarded([&] {
      impl_->models.push_back({deepkf::Potential(path, impl_->device.str()), {}});
    });
    if (!message.empty()) error->all(FLERR, ps() + " cannot load model file " + path + ": " + message);
    cutoff_ = std::max(cutoff_, impl_->models.back().config().rcut);
  }
  comm_reverse = 3 * static_cast<int>(impl_->models.size());

  if (comm->me == 0) {
    for (const auto& m : impl_->models) {
      const auto& c = m.config();
      utils::logmesg(lmp, ps() + ": " + m.path() + ": types " + join(c.type_map) + ", rcut " +
                              std::to_string(c.rcut) + " A, " + c.precision_name() + ", " +
                              (m.potential.loaded().model->compressed() ? "compressed, " : "") +
                              (m.potential.device().is_cuda() ? "cuda" : "cpu") + "\n");
    }
  }
}

void PairDeepkf::open_deviation_file() {
  if (out_ != nullptr) {
    std::fclose(static_cast<FILE*>(out_));
    out_ = nullptr;
  }
  if (impl_->models.size() > 1 && comm->me == 0) {
    FILE* fp = std::fopen(out_file_.c_str(), "w");
    if (fp == nullptr) error->one(FLERR, ps() + " cannot open out_file " + out_file_ + " for writing");
    std::fprintf(fp, "%s\n", deviation_header());
    std::fflush(fp);
    out_ = fp;
  }
}

// pair_coeff * * E1 E2 ... : the element name (or NULL) of each LAMMPS type. A bare `pair_coeff * *` maps
// LAMMPS type t to the first model's type t - 1 (DeePMD-kit's reading).
void PairDeepkf::coeff(int narg, char** arg) {
  if (!allocated) allocate();
  const int ntypes = atom->ntypes;
  if (narg < 2 || std::strcmp(arg[0], "*") != 0 || std::strcmp(arg[1], "*") != 0)
    error->all(FLERR, pc() + " must be pair_coeff * * followed by element names");
  elements_.assign(static_cast<std::size_t>(ntypes) + 1, "NULL");
  if (narg == 2) {
    const auto& names = impl_->models.front().config().type_map;
    if (ntypes > static_cast<int>(names.size()))
      error->all(FLERR, pc() +
                            ": pair_coeff * * without element names maps atom type t to the model's type "
                            "t - 1, but the input has " +
                            std::to_string(ntypes) + " atom types and model file " +
                            impl_->models.front().path() + " " + std::to_string(names.size()) + " (" +
                            join(names) + "): name the element of each atom type");
    for (int t = 1; t <= ntypes; ++t) elements_[t] = names[static_cast<std::size_t>(t - 1)];
  } else if (narg == 2 + ntypes) {
    for (int t = 1; t <= ntypes; ++t) elements_[t] = arg[1 + t];
  } else {
    error->all(FLERR, pc() + " expects * * and one element name per atom type (" + std::to_string(ntypes) +
                          " types), got " + std::to_string(narg) + " arguments");
  }
  for (auto& m : impl_->models) {
    const auto& names = m.config().type_map;
    m.type_of.assign(static_cast<std::size_t>(ntypes) + 1, -1);
    for (int t = 1; t <= ntypes; ++t) {
      if (elements_[t] == "NULL") continue;
      const auto it = std::find(names.begin(), names.end(), elements_[t]);
      if (it == names.end())
        error->all(FLERR, pc() + ": element " + elements_[t] + " of atom type " + std::to_string(t) +
                              " is not in model file " + m.path() + " (its types: " + join(names) + ")");
      m.type_of[t] = static_cast<int>(it - names.begin());
    }
  }
  int count = 0;
  for (int i = 1; i <= ntypes; ++i) {
    for (int j = i; j <= ntypes; ++j) {
      if (elements_[i] != "NULL" && elements_[j] != "NULL") {
        setflag[i][j] = 1;
        ++count;
      }
    }
  }
  if (count == 0) error->all(FLERR, pc() + " maps no atom type to an element");
}

void PairDeepkf::init_style() {
  if (force->newton_pair == 0)
    error->all(FLERR, ps() +
                          " requires newton pair on (forces on ghost atoms reach their owners only "
                          "through reverse communication)");
  if (std::strcmp(update->unit_style, "metal") != 0)
    error->all(FLERR, ps() + " requires units metal (eV, Angstrom); this input uses units " +
                          std::string(update->unit_style));
  if (domain->dimension != 3) error->all(FLERR, ps() + " requires a 3d system");
  if (impl_->models.empty()) error->all(FLERR, ps() + " has no model");
  const int irequest = neighbor->request(this, instance_me);
  neighbor->requests[irequest]->half = 0;
  neighbor->requests[irequest]->full = 1;
}

double PairDeepkf::init_one(int i, int j) {
  if (setflag[i][j] == 0) error->all(FLERR, "all pair coeffs are not set for " + ps());
  return cutoff_;
}

void PairDeepkf::fail_on_this_rank(const std::string& msg) {
  try {
    error->one(FLERR, msg);
  } catch (...) {
    if (screen) std::fflush(screen);
    if (logfile) std::fflush(logfile);
    throw;
  }
  std::abort();  // error->one does not return
}

// Collective: the first time any rank saw neighbours beyond the compressed model's tables, rank 0 says so.
void PairDeepkf::warn_beyond_table(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, world);
  if (total == 0) return;
  impl_->warned_beyond_table = true;
  if (comm->me == 0)
    error->warning(FLERR,
                   ps() + ": " + std::to_string(total) + " neighbour slots at timestep " +
                       std::to_string(update->ntimestep) + " lie beyond the tables of compressed model " +
                       model_paths_.front() +
                       " (atoms closer than the tables reach): evaluated on the tables' tangent line "
                       "there; compress again with a larger --extrapolate or --min-distance, or run the "
                       "uncompressed model (said once)");
}

}  // namespace LAMMPS_NS
