// The cost of the Kalman uncertainty of one frame against one RLEKF training step on the same frame, in the
// same process, alternately (docs/benchmarks.md, "Uncertainty").
//
// usage: bench_uncertainty CKPT DATA [REPEATS (5)] [FORCE_ATOMS...]
//   CKPT an RLEKF checkpoint (its model, covariance and optimizer settings); DATA frames (any path deepkf
//   reads). FORCE_ATOMS: the --force-atoms values to time (default 8 and 0 = every atom). Torch threads:
//   LibTorch's default, or $DEEPKF_BENCH_THREADS.
//
// Per repeat, on frame r of DATA: one training step (RlekfStep::take with the checkpoint's settings on a
// batch of that frame: 2 energy and nselect / groupsize force updates) and, for each FORCE_ATOMS, the scoring
// of that frame alone (score_frames: forward pass, 1 + 3k backward passes, the applications of P), with the
// force components' gradients through the graph and, for a float64 model, by difference of energy
// gradients. Medians are printed as a markdown row per FORCE_ATOMS and way, with the ratio scoring /
// training step.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "optim/Optimizers.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/CheckpointCovariance.hpp"
#include "src/train/TrainConfig.hpp"
#include "src/uncertainty/KalmanUncertainty.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double seconds(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace deepkf;
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_uncertainty CKPT DATA [REPEATS] [FORCE_ATOMS...]\n");
    return 2;
  }
  const std::string ckpt_path = argv[1], data = argv[2];
  const int repeats = argc > 3 ? std::stoi(argv[3]) : 5;
  std::vector<std::int64_t> force_atoms;
  for (int i = 4; i < argc; ++i) force_atoms.push_back(std::stoll(argv[i]));
  if (force_atoms.empty()) force_atoms = {8, 0};
  const auto comm = make_serial_communicator();
  if (const char* threads = std::getenv("DEEPKF_BENCH_THREADS")) torch::set_num_threads(std::atoi(threads));

  auto ckpt = read_checkpoint(ckpt_path, torch::kCPU);
  auto filter = checkpoint_covariance(ckpt, ckpt_path, comm);
  const auto config = ckpt.model->config();
  const auto sets = whole(open_dataset({data}, config.type_map).systems);
  // The training step of the checkpoint's run over a copy of its model.
  TrainConfig cfg = TrainConfig::from_json(ckpt.meta.at("config"), ckpt_path, "/");
  DeepPot trained(config);
  {
    torch::NoGradGuard no_grad;
    const auto from = ckpt.model->parameters();
    auto to = trained->parameters();
    for (std::size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
  }
  auto step = make_training_step(cfg.step(), trained, comm);

  std::vector<ForceGradients> ways{ForceGradients::kGraph};
  if (config.precision == torch::kFloat64) ways.push_back(ForceGradients::kDifference);
  std::vector<double> train_s;
  // Per (force atoms, way): index k * ways.size() + w.
  std::vector<std::vector<double>> score_s(force_atoms.size() * ways.size());
  std::vector<std::int64_t> backward(score_s.size(), 0);
  std::int64_t natoms = 0;
  for (int r = 0; r < repeats; ++r) {
    const FrameSubset& set = sets[static_cast<std::size_t>(r) % sets.size()];
    const std::int64_t f = (r / static_cast<std::int64_t>(sets.size())) % set.nframes();
    const System frame = set.read({f});
    natoms = frame.natoms;
    const Batch b = make_batch(frame, {0}, config, torch::kCPU, config.precision);
    const SystemInfo& info = set.info();
    train_s.push_back(seconds([&] { step->take(StepInput{b, info, 1, 0, r}); }));
    for (std::size_t k = 0; k < score_s.size(); ++k) {
      UncertaintyOptions options;
      options.force_atoms = force_atoms[k / ways.size()];
      options.force_gradients = ways[k % ways.size()];
      ScoringResult result;
      score_s[k].push_back(seconds([&] {
        result = score_frames(ckpt.model, *filter,
                              {FrameSubset{set.source, {set.frames[static_cast<std::size_t>(f)]}}}, options,
                              *comm);
      }));
      backward[k] = result.cost.backward_passes;
    }
  }
  const double t = median(train_s);
  std::printf(
      "| data | atoms | parameters | threads | force atoms | force gradients | backward passes | scoring "
      "(s/frame) | training step (s) | ratio |\n|---|---:|---:|---:|---:|---|---:|---:|---:|---:|\n");
  for (std::size_t k = 0; k < score_s.size(); ++k) {
    const double s = median(score_s[k]);
    const std::int64_t atoms = force_atoms[k / ways.size()];
    std::printf("| %s | %lld | %lld | %d | %s | %s | %lld | %.3f | %.3f | %.2f |\n", data.c_str(),
                static_cast<long long>(natoms), static_cast<long long>(ckpt.model->parameter_count()),
                torch::get_num_threads(), atoms > 0 ? std::to_string(atoms).c_str() : "all",
                ways[k % ways.size()] == ForceGradients::kGraph ? "graph" : "difference",
                static_cast<long long>(backward[k]), s, t, s / t);
  }
  return 0;
}
