// Data-parallel RLEKF training: time per training step and per Kalman step, and what the ranks send each
// other, on si_mlearn with a moderately sized model. Run it under mpiexec with 1 and 2 ranks and the same
// global batch (bench/train/mpi_scaling.sh does both and computes the parallel efficiency).
//
// usage: [mpiexec -n R] bench_train_mpi [STEPS (8)] [BATCH (4)] [BLOCKSIZE (1024)] [DATASETS_DIR]
//   STEPS measured training steps, BATCH frames per global batch (all from sys_Si64, 64 atoms), BLOCKSIZE
//   kf_blocksize. DATASETS_DIR defaults to $DEEPKF_SHARED_DATASETS or <source>/../shared/datasets.
//   Torch threads per rank: cores / R, or $DEEPKF_BENCH_THREADS.
//
// Method. Two runs from the same start: A trains 2 steps, B trains 2 + STEPS steps; both pay the same
// fixed costs inside run() (two displays, the final checkpoint), so (B - A) / STEPS is the time of one
// training step. Set-up (data, statistics, P allocation) is outside run() and not counted. The Trainer
// talks to the ranks through a counting Communicator that records every collective's payload and the time
// spent in it, by kind:
//   grad      allreduce_sum of N float64 values (the gradient, h), once per Kalman step
//   small     other allreduce_sum calls (error sums: 2 values; a terms: one value per block)
//   gather    allgatherv of the owned weights (N values of the parameter dtype), once per Kalman step
//   control   allreduce_max and any() (stop requests, error agreement)
//   bcast     broadcast (checkpoints: every covariance block goes to rank 0)
// With several ranks each collective is preceded by a barrier, so that the time spent waiting for the
// slowest rank (load imbalance) is told apart from the transfer. A training step has the Kalman steps its
// settings give (deepkf::kalman_updates_per_step; at the defaults 6: the energy, ceil(24 / 6) = 4 force
// groups, the energy again for energy_last). Last, the filter update alone (KalmanFilter::update with a given
// h, same parameters, blocks and ranks) is timed, so that a Kalman step splits into filter and measurement
// (model evaluation, gradient, reductions), and so are the collectives of one Kalman step by themselves.
#include <mpi.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "optim/Optimizers.hpp"
#include "src/core/MpiCommunicator.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/Trainer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using json = nlohmann::json;

struct Tally {
  std::int64_t calls = 0;
  std::int64_t bytes = 0;  // payload: values x bytes per value (for allgatherv: the whole gathered vector)
  double seconds = 0.0;    // inside the collective, after the ranks met
  double wait = 0.0;       // in the barrier before it: waiting for the slowest rank (load imbalance)
  double cpu = 0.0;        // process CPU seconds inside barrier + collective (MPI spins while it waits)
};

// CPU seconds used by this process (all its threads) so far.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

class CountingCommunicator final : public deepkf::Communicator {
 public:
  explicit CountingCommunicator(std::shared_ptr<deepkf::Communicator> inner) : inner_(std::move(inner)) {}
  std::map<std::string, Tally> tally;
  std::int64_t nparams = 0;  // an allreduce_sum of this many doubles is the gradient

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  int local_size() const override { return inner_->local_size(); }
  void allreduce_sum(double* d, std::size_t n) override {
    timed(static_cast<std::int64_t>(n) == nparams ? "grad" : "small", n * sizeof(double),
          [&] { inner_->allreduce_sum(d, n); });
  }
  void allreduce_sum(float* d, std::size_t n) override {
    timed("small", n * sizeof(float), [&] { inner_->allreduce_sum(d, n); });
  }
  void allreduce_sum(std::int64_t* d, std::size_t n) override {
    timed("small", n * sizeof(std::int64_t), [&] { inner_->allreduce_sum(d, n); });
  }
  void allreduce_max(double* d, std::size_t n) override {
    timed("control", n * sizeof(double), [&] { inner_->allreduce_max(d, n); });
  }
  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts) override {
    std::size_t total = 0;
    for (auto c : counts) total += c;
    timed("gather", total, [&] { inner_->allgatherv(send, recv, counts); });
  }
  void broadcast(void* data, std::size_t nbytes, int root) override {
    timed("bcast", nbytes, [&] { inner_->broadcast(data, nbytes, root); });
  }
  void transfer(void* data, std::size_t nbytes, int from, int to) override {
    inner_->transfer(data, nbytes, from, to);  // checkpoints only, which the benchmark does not write
  }
  void barrier() override {
    timed("control", 0, [] {});
  }
  bool any(bool local) override {
    bool out = false;
    timed("control", sizeof(int), [&] { out = inner_->any(local); });
    return out;
  }

 private:
  // With several ranks a barrier first separates waiting for the other ranks from the transfer itself.
  template <typename F>
  void timed(const char* kind, std::size_t bytes, F&& f) {
    const double c0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    if (inner_->size() > 1) inner_->barrier();
    const auto t1 = Clock::now();
    f();
    auto& t = tally[kind];
    t.calls += 1;
    t.bytes += static_cast<std::int64_t>(bytes);
    t.wait += std::chrono::duration<double>(t1 - t0).count();
    t.seconds += std::chrono::duration<double>(Clock::now() - t1).count();
    t.cpu += process_cpu_seconds() - c0;
  }
  std::shared_ptr<deepkf::Communicator> inner_;
};

json input_doc(const std::string& si, std::int64_t steps, int batch, std::int64_t blocksize) {
  // DeepPot-SE with embedding [16, 32, 64], axis 8 and fitting [64, 64, 64]: 44033 parameters. sel 36 is
  // what "auto" gives on sys_Si64 (at most 32 neighbours within 5 A).
  json doc = json::parse(R"({
    "model": {
      "type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 5.0, "rcut_smth": 0.5, "sel": [36], "neuron": [16, 32, 64],
                     "axis_neuron": 8, "type_one_side": true, "seed": 1, "precision": "float64"},
      "fitting_net": {"neuron": [64, 64, 64], "resnet_dt": true, "seed": 1}
    },
    "optimizer": {"type": "RLEKF", "nselect": 24, "groupsize": 6, "p0": 100.0},
    "training": {"seed": 7, "disp_freq": 1000000, "save_freq": 1000000}
  })");
  doc["optimizer"]["kf_blocksize"] = blocksize;
  doc["training"]["training_data"] = {{"systems", {si + "/train/sys_Si64"}}, {"batch_size", batch}};
  doc["training"]["numb_steps"] = steps;
  // Torch threads per rank: cores / R unless DEEPKF_BENCH_THREADS says otherwise.
  if (const char* t = std::getenv("DEEPKF_BENCH_THREADS"); t && *t)
    doc["training"]["num_threads"] = std::atoi(t);
  return doc;
}

// DATASETS_DIR: the fourth argument, $DEEPKF_SHARED_DATASETS or <source>/../shared/datasets.
std::string datasets_dir(int argc, char** argv) {
  if (argc > 4) return argv[4];
  if (const char* env = std::getenv("DEEPKF_SHARED_DATASETS"); env && *env) return env;
  return std::string(DEEPKF_SOURCE_DIR) + "/../shared/datasets";
}

// A scratch folder name every rank agrees on (rank 0's).
std::string shared_scratch(deepkf::Communicator& mpi) {
  std::string tmp =
      mpi.is_root()
          ? (fs::temp_directory_path() / ("deepkf-bench-train-mpi-" + std::to_string(::getpid()))).string()
          : "";
  std::uint64_t n = tmp.size();
  mpi.broadcast(&n, sizeof n, 0);
  tmp.resize(n);
  mpi.broadcast(tmp.data(), n, 0);
  return tmp;
}

// One training run() and what it cost.
struct Run {
  double seconds = 0.0;
  double cpu = 0.0;  // process CPU seconds in run()
  std::map<std::string, Tally> tally;
  std::int64_t nparams = 0;
  std::int64_t p_bytes = 0;
};

Run train_run(const std::shared_ptr<deepkf::Communicator>& mpi, const json& doc, const std::string& dir) {
  auto counting = std::make_shared<CountingCommunicator>(mpi);
  const auto config = deepkf::TrainConfig::from_json(doc, "bench-input.json", "/");
  deepkf::TrainerOptions options;
  options.output_dir = dir;
  options.progress = 0;
  options.write_model = false;
  deepkf::Trainer trainer(config, options, counting);
  Run r;
  r.nparams = static_cast<std::int64_t>(trainer.flat_parameters().size());
  r.p_bytes = trainer.covariance_bytes();
  counting->nparams = r.nparams;
  counting->tally.clear();  // count run() only
  mpi->barrier();
  const double c0 = process_cpu_seconds();
  r.seconds = trainer.run().wall_seconds;
  r.cpu = process_cpu_seconds() - c0;
  r.tally = counting->tally;
  return r;
}

// The collectives of `kind` that run b made beyond run a's.
Tally extra(const Run& a, const Run& b, const std::string& kind) {
  Tally t;
  if (const auto ib = b.tally.find(kind); ib != b.tally.end()) t = ib->second;
  if (const auto ia = a.tally.find(kind); ia != a.tally.end()) {
    t.calls -= ia->second.calls;
    t.bytes -= ia->second.bytes;
    t.seconds -= ia->second.seconds;
    t.wait -= ia->second.wait;
    t.cpu -= ia->second.cpu;
  }
  return t;
}

const char* const kKinds[] = {"grad", "small", "gather", "control", "bcast"};

// The median (slowest rank's) seconds of `f` over `rounds` calls after `warm` warm-up calls.
template <typename F>
double median_seconds(deepkf::Communicator& mpi, int warm, int rounds, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < warm + rounds; ++r) {
    mpi.barrier();
    const auto t0 = Clock::now();
    f();
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    mpi.allreduce_max(&dt, 1);
    if (r >= warm) t.push_back(dt);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The filter alone: KalmanFilter::update with a given h on the input's model, blocks and ranks (median of 7
// after 2 warm-up updates). `nblocks` receives the number of blocks.
double filter_update_seconds(const json& doc, std::int64_t blocksize,
                             const std::shared_ptr<deepkf::Communicator>& mpi, std::int64_t& nblocks) {
  torch::manual_seed(11);
  deepkf::DeepPot model(deepkf::ModelConfig::from_json(doc["model"]));
  auto params = model->parameters();
  deepkf::KalmanOptions k;
  k.blocksize = blocksize;
  k.p0 = 100.0;
  deepkf::KalmanFilter filter(params, k, mpi);
  nblocks = filter.layout().num_blocks();
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) grads.push_back(torch::randn_like(p) * 1e-3);
  return median_seconds(*mpi, 2, 7, [&] { filter.update(1e-3, grads); });
}

// The collectives of one Kalman step alone (median of 21 after 3 warm-up rounds): allreduce of N float64
// (h), of 2 (error pieces) and of nblocks (a terms), allgatherv of N float64 (weights). 0 on one rank.
double kalman_collectives_seconds(deepkf::Communicator& mpi, std::int64_t nparams, std::int64_t nblocks) {
  const int nranks = mpi.size();
  if (nranks == 1) return 0.0;
  const auto n = static_cast<std::size_t>(nparams);
  std::vector<double> h(n, 1.0), w(n, 1.0), two(2, 1.0), terms(static_cast<std::size_t>(nblocks), 1.0);
  std::vector<std::size_t> counts(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    counts[static_cast<std::size_t>(r)] =
        (n * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(nranks) -
         n * static_cast<std::size_t>(r) / static_cast<std::size_t>(nranks)) *
        sizeof(double);
  }
  const std::size_t own = n * static_cast<std::size_t>(mpi.rank()) / static_cast<std::size_t>(nranks);
  return median_seconds(mpi, 3, 21, [&] {
    mpi.allreduce_sum(h.data(), n);
    mpi.allreduce_sum(two.data(), two.size());
    mpi.allreduce_sum(terms.data(), terms.size());
    mpi.allgatherv(w.data() + own, w.data(), counts);
  });
}

// What rank 0 prints.
struct Report {
  int nranks = 1, batch = 0;
  std::int64_t blocksize = 0, steps = 0, warm = 0, nblocks = 0, p_total = 0;
  Run a, b;
  double kalman_per_step = 0.0, step_s = 0.0, filter_s = 0.0, work_cpu = 0.0, work_cpu_max = 0.0;
  double collectives_s = 0.0;
  json kalman;  // the decided RLEKF settings
};

void print_report(const Report& r) {
  const double n = static_cast<double>(r.b.nparams);
  const double steps = static_cast<double>(r.steps);
  std::printf(
      "ranks %d, torch threads per rank %d, global batch %d frames of Si64 (64 atoms), kf_blocksize %lld\n",
      r.nranks, torch::get_num_threads(), r.batch, static_cast<long long>(r.blocksize));
  std::printf("parameters N %lld in %lld blocks; covariance %.1f MiB on rank 0, %.1f MiB over all ranks\n",
              static_cast<long long>(r.b.nparams), static_cast<long long>(r.nblocks),
              static_cast<double>(r.b.p_bytes) / (1 << 20), static_cast<double>(r.p_total) / (1 << 20));
  std::printf("run(): %.2f s for %lld steps, %.2f s for %lld steps\n", r.a.seconds,
              static_cast<long long>(r.warm), r.b.seconds, static_cast<long long>(r.warm + r.steps));
  std::printf(
      "per training step (%g Kalman steps: kf_update %s, nselect %d in groups of %d, energy_last %s):\n",
      r.kalman_per_step, r.kalman.at("kf_update").get<std::string>().c_str(),
      r.kalman.at("nselect").get<int>(), r.kalman.at("groupsize").get<int>(),
      r.kalman.at("energy_last").get<bool>() ? "true" : "false");
  std::printf("  training step   %8.1f ms\n", 1e3 * r.step_s);
  std::printf("  Kalman step     %8.1f ms   of which the filter update alone %.1f ms (measurement %.1f ms)\n",
              1e3 * r.step_s / r.kalman_per_step, 1e3 * r.filter_s,
              1e3 * (r.step_s / r.kalman_per_step - r.filter_s));
  std::printf("  CPU time outside the collectives: %.1f ms on rank 0, %.1f ms on the busiest rank\n",
              1e3 * r.work_cpu, 1e3 * r.work_cpu_max);
  std::printf(
      "collectives per training step on rank 0 (payload bytes; transfer ms after the ranks met; wait ms "
      "for the slowest rank before it):\n");
  double comm_s = 0.0, wait_s = 0.0;
  std::int64_t comm_bytes = 0;
  for (const char* kind : kKinds) {
    const Tally t = extra(r.a, r.b, kind);
    comm_s += t.seconds;
    wait_s += t.wait;
    comm_bytes += t.bytes;
    std::printf("  %-8s calls %6.2f  bytes %11.0f  transfer ms %7.2f  wait ms %7.2f\n", kind,
                static_cast<double>(t.calls) / steps, static_cast<double>(t.bytes) / steps,
                1e3 * t.seconds / steps, 1e3 * t.wait / steps);
  }
  // Model (docs/mpi.md): per Kalman step allreduce(N float64) + allgather(N float64) + allreduce(2 +
  // nblocks) float64 values, and one any() (4 bytes) per training step; nothing with one rank.
  const double model_bytes =
      r.nranks > 1
          ? r.kalman_per_step * (8.0 * n + 8.0 * n + 8.0 * (2.0 + static_cast<double>(r.nblocks))) + 4.0
          : 0.0;
  std::printf("  total    bytes %.0f (model %.0f), transfer %.2f ms, wait %.2f ms per training step\n",
              static_cast<double>(comm_bytes) / steps, model_bytes, 1e3 * comm_s / steps,
              1e3 * wait_s / steps);
  if (r.nranks > 1)
    std::printf("the collectives of one Kalman step by themselves: %.3f ms\n", 1e3 * r.collectives_s);
  std::printf(
      "RESULT ranks %d step_ms %.1f kalman_step_ms %.1f filter_ms %.1f bytes_per_step %.0f "
      "model_bytes_per_step %.0f transfer_ms_per_step %.2f wait_ms_per_step %.2f collectives_alone_ms %.3f "
      "work_cpu_ms_per_step %.1f\n",
      r.nranks, 1e3 * r.step_s, 1e3 * r.step_s / r.kalman_per_step, 1e3 * r.filter_s,
      static_cast<double>(comm_bytes) / steps, model_bytes, 1e3 * comm_s / steps, 1e3 * wait_s / steps,
      1e3 * r.collectives_s, 1e3 * r.work_cpu_max);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    Report r;
    r.steps = argc > 1 ? std::atoll(argv[1]) : 8;
    r.batch = argc > 2 ? std::atoi(argv[2]) : 4;
    r.blocksize = argc > 3 ? std::atoll(argv[3]) : 1024;
    const std::string si = fs::weakly_canonical(fs::path(datasets_dir(argc, argv)) / "si_mlearn").string();

    auto mpi = std::make_shared<deepkf::MpiCommunicator>(MPI_COMM_WORLD);
    r.nranks = mpi->size();
    if (!fs::is_directory(si)) {
      if (mpi->is_root()) std::fprintf(stderr, "bench_train_mpi: dataset %s not found\n", si.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const std::string tmp = shared_scratch(*mpi);

    // Training: run() of 2 steps and of 2 + STEPS steps.
    r.warm = 2;
    r.a = train_run(mpi, input_doc(si, r.warm, r.batch, r.blocksize), tmp + "/a");
    r.b = train_run(mpi, input_doc(si, r.warm + r.steps, r.batch, r.blocksize), tmp + "/b");
    r.step_s = (r.b.seconds - r.a.seconds) / static_cast<double>(r.steps);
    mpi->allreduce_max(&r.step_s, 1);  // the slowest rank's
    // This rank's CPU time per step outside the collectives: its share of the work, whatever the machine's
    // other load (with 1 torch thread per rank; idle OpenMP workers spin and inflate it with more).
    r.work_cpu = r.b.cpu - r.a.cpu;
    for (const char* kind : kKinds) r.work_cpu -= extra(r.a, r.b, kind).cpu;
    r.work_cpu /= static_cast<double>(r.steps);
    r.work_cpu_max = r.work_cpu;
    mpi->allreduce_max(&r.work_cpu_max, 1);
    // Kalman steps per training step from the resolved settings (sys_Si64 has forces; the input sets no
    // virial prefactor, so no virial step).
    const json doc0 = input_doc(si, 1, r.batch, r.blocksize);
    const deepkf::TrainConfig config0 = deepkf::TrainConfig::from_json(doc0, "bench-input.json", "/");
    r.kalman_per_step = deepkf::kalman_updates_per_step(config0.step(), false, r.b.nparams);
    r.kalman = deepkf::decided_rlekf_settings(config0.step(), r.b.nparams, 64.0).to_json();
    r.p_total = r.b.p_bytes;
    mpi->allreduce_sum(&r.p_total, 1);

    r.filter_s = filter_update_seconds(doc0, r.blocksize, mpi, r.nblocks);
    r.collectives_s = kalman_collectives_seconds(*mpi, r.b.nparams, r.nblocks);
    if (mpi->is_root()) print_report(r);
    mpi->barrier();
    if (mpi->is_root()) fs::remove_all(tmp);
  }
  MPI_Finalize();
  return 0;
}
