#include "src/train/Trainer.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/data/SystemStatistics.hpp"
#include "src/geometry/NeighborList.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/ModelFile.hpp"
#include "src/model/Statistics.hpp"
#include "src/train/BatchSampler.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/ProgressBar.hpp"
#include "src/train/StopSignal.hpp"
#include "src/train/TrainingStep.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

struct Trainer::Impl {
  TrainConfig cfg;
  TrainerOptions opt;
  std::shared_ptr<Communicator> comm;
  torch::Device device{torch::kCPU};
  ModelConfig mcfg;
  DeepPot model{nullptr};
  std::vector<torch::Tensor> params;
  // Frames are read from the files when a batch needs them; only shapes and types stay in memory.
  std::vector<std::shared_ptr<FrameSource>> sources;  // every system opened (training and validation)
  std::vector<FrameSubset> train;
  std::vector<FrameSubset> valid;
  std::vector<int> batch_size;
  std::vector<int> valid_batch_size;
  std::unique_ptr<BatchSampler> sampler;
  std::unique_ptr<TrainingStep> optimizer;  // RLEKF or Adam, one step per batch
  std::int64_t step = 0;
  std::int64_t valid_cursor = 0;  // next validation (system, frame) position, cycles through all frames
  std::shared_ptr<spdlog::logger> log;
  double wall_before = 0.0;  // training seconds of earlier runs (restarts)

  Impl(const TrainConfig& c, const TrainerOptions& o, std::shared_ptr<Communicator> cm)
      : cfg(c), opt(o), comm(std::move(cm)) {}

  bool root() const { return comm->rank() == 0; }
  std::string out(const std::string& name) const { return (fs::path(opt.output_dir) / name).string(); }

  void setup();
  void setup_logging();
  void setup_threads_and_device();
  // Opens the data and splits it; no communication (run inside together()). Returns each load as opened
  // (before any split) with the paths that name it, for check_data.
  std::vector<std::pair<std::vector<FrameSubset>, std::string>> load_data();
  // Reads this rank's share of every frame of `parts` once: checks the values (a bad number or cell fails
  // here, not mid-run) and judges the units over all ranks (check_units), naming `what`.
  void check_data(const std::vector<FrameSubset>& parts, const std::string& what);
  void resolve_sel();
  void compute_statistics();
  void build_optimizer();
  void restore(const std::string& path);

  // This rank's share [begin, end) of a global batch of n frames.
  std::pair<std::size_t, std::size_t> my_share(std::size_t n) const {
    const auto r = static_cast<std::size_t>(comm->rank());
    const auto size = static_cast<std::size_t>(comm->size());
    return {n * r / size, n * (r + 1) / size};
  }
  Batch local_batch(const std::vector<FrameSubset>& parts, const BatchRef& ref) const;
  // Calls f(frames, first) for chunks of at most `chunk` frames of this rank's share of `part`; first is
  // the position in `part` of the chunk's first frame.
  template <typename F>
  void for_my_frames(const FrameSubset& part, std::int64_t chunk, F&& f) const;

  void reduce(std::vector<double>& values) const {
    if (comm->size() > 1) comm->allreduce_sum(values.data(), values.size());
  }
  // Runs f, which may fail on some ranks only (file I/O, root-only writes), then agrees over all ranks
  // whether it failed anywhere; if so every rank throws: a failing rank its own error, the others a
  // ParallelError with the lowest failing rank's message. Collective; f itself must not communicate.
  template <typename F>
  void together(F&& f);
  // ParallelError unless every rank loaded the same number of systems, frames and atoms.
  void check_same_data() const;

  ErrorMetrics train_step(const BatchRef& ref);
  ErrorMetrics validate(bool all_frames);
  void write_checkpoint_now(const std::string& path);
  json provenance() const;
};

// ----------------------------------------------------------------------------------------------- set-up

template <typename F>
void Trainer::Impl::together(F&& f) {
  std::exception_ptr error;
  std::string what;
  try {
    f();
  } catch (const std::exception& e) {
    error = std::current_exception();
    what = e.what();
  }
  if (comm->size() == 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
  // The lowest failing rank r, as max(size - r) (0: none failed).
  double code = error ? static_cast<double>(comm->size() - comm->rank()) : 0.0;
  comm->allreduce_max(&code, 1);
  if (code == 0.0) return;
  // Every rank takes part in sending the failing rank's message, then the failing ranks rethrow their own.
  const int failed = comm->size() - static_cast<int>(code);
  std::string message = what;
  std::uint64_t length = message.size();
  comm->broadcast(&length, sizeof length, failed);
  message.resize(length);
  comm->broadcast(message.data(), length, failed);
  if (error) std::rethrow_exception(error);
  throw ParallelError("rank " + std::to_string(failed) + " failed: " + message);
}

void Trainer::Impl::setup_logging() {
  // Only the root writes files: the output directory and train.log are its own.
  std::vector<spdlog::sink_ptr> sinks;
  together([&] {
    if (!root()) return;
    fs::create_directories(opt.output_dir);
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(out("train.log"),
                                                                        !opt.restart.empty() ? false : true));
  });
  log = std::make_shared<spdlog::logger>("deepkf", sinks.begin(), sinks.end());
  log->set_pattern("[%Y-%m-%d %H:%M:%S] %v");
  log->set_level(spdlog::level::info);
}

void Trainer::Impl::setup_threads_and_device() {
  // LibTorch defaults to one thread in a plain program here: use the cores, shared among local ranks.
  int threads = cfg.num_threads;
  if (threads <= 0) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = std::max(1, cores / std::max(1, comm->size()));
  }
  torch::set_num_threads(threads);
  if (cfg.device == "cpu") {
    device = torch::kCPU;
  } else if (cfg.device == "auto") {
    device =
        torch::cuda::is_available()
            ? torch::Device(torch::kCUDA, comm->local_rank() %
                                              std::max<int>(1, static_cast<int>(torch::cuda::device_count())))
            : torch::Device(torch::kCPU);
  } else {
    if (!torch::cuda::is_available()) {
      throw ConfigError("device '" + cfg.device + "' in " + cfg.file +
                        " asks for CUDA, but this build of deepkf or this machine has no GPU");
    }
    device =
        cfg.device == "cuda"
            ? torch::Device(torch::kCUDA, comm->local_rank() % static_cast<int>(torch::cuda::device_count()))
            : torch::Device(cfg.device);
  }
  log->info("ranks {}, threads per rank {}, device {}", comm->size(), threads, device.str());
}

namespace {

std::vector<std::string> resolve_paths(const std::vector<std::string>& paths, const std::string& base) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    // "file.h5#group" keeps its group suffix; only the file part is resolved.
    const auto hash = p.find('#');
    const std::string file = p.substr(0, hash);
    const fs::path resolved = fs::path(file).is_absolute() ? fs::path(file) : fs::path(base) / file;
    out.push_back(resolved.lexically_normal().string() + (hash == std::string::npos ? "" : p.substr(hash)));
  }
  return out;
}

// DeePMD-kit's "auto" batch size: the smallest batch with at least 32 atoms.
int auto_batch_size(std::int64_t natoms) {
  return static_cast<int>(std::max<std::int64_t>(1, (32 + natoms - 1) / natoms));
}

std::vector<double> flatten_cpu(const std::vector<torch::Tensor>& tensors) {
  std::vector<double> out;
  for (const auto& t : tensors) {
    const auto c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    out.insert(out.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::vector<FrameSubset>, std::string>> Trainer::Impl::load_data() {
  std::vector<std::pair<std::vector<FrameSubset>, std::string>> loads;
  const auto type_map = cfg.model.value("type_map", std::vector<std::string>{});
  const auto train_paths = resolve_paths(cfg.training_data.systems, cfg.base_dir);
  OpenedData training = open_dataset(train_paths, type_map);
  sources = training.systems;
  train = whole(training.systems);
  loads.emplace_back(train, describe_paths(train_paths));
  if (!cfg.validation_data.systems.empty()) {
    const auto valid_paths = resolve_paths(cfg.validation_data.systems, cfg.base_dir);
    OpenedData validation = open_dataset(valid_paths, type_map);
    sources.insert(sources.end(), validation.systems.begin(), validation.systems.end());
    valid = whole(validation.systems);
    loads.emplace_back(valid, describe_paths(valid_paths));
  } else if (cfg.validation_fraction > 0.0) {
    std::vector<std::int64_t> nframes;
    for (const auto& s : train) nframes.push_back(s.nframes());
    const auto split =
        split_frames(nframes, cfg.validation_fraction,
                     cfg.validation_split == "system" ? SplitMode::kSystem : SplitMode::kFrame, cfg.seed);
    std::vector<FrameSubset> whole_train = std::move(train);
    train.clear();
    for (const auto& p : split.train)
      train.push_back(FrameSubset{whole_train[static_cast<std::size_t>(p.system)].source, p.frames});
    for (const auto& p : split.validation)
      valid.push_back(FrameSubset{whole_train[static_cast<std::size_t>(p.system)].source, p.frames});
  }
  for (const auto& s : train)
    batch_size.push_back(cfg.training_data.batch_auto ? auto_batch_size(s.info().natoms)
                                                      : cfg.training_data.batch_size);
  for (const auto& s : valid)
    valid_batch_size.push_back(cfg.validation_data.batch_auto ? auto_batch_size(s.info().natoms)
                                                              : cfg.validation_data.batch_size);
  std::int64_t frames = 0, vframes = 0;
  for (const auto& s : train) frames += s.nframes();
  for (const auto& s : valid) vframes += s.nframes();
  log->info("training data: {} systems, {} frames; validation: {} systems, {} frames", train.size(), frames,
            valid.size(), vframes);
  return loads;
}

template <typename F>
void Trainer::Impl::for_my_frames(const FrameSubset& part, std::int64_t chunk, F&& f) const {
  const auto [begin, end] = my_share(static_cast<std::size_t>(part.nframes()));
  for (auto first = static_cast<std::int64_t>(begin); first < static_cast<std::int64_t>(end);
       first += chunk) {
    const std::int64_t last = std::min(static_cast<std::int64_t>(end), first + chunk);
    f(part.read_range(first, last), first);
  }
}

void Trainer::Impl::check_data(const std::vector<FrameSubset>& parts, const std::string& what) {
  constexpr std::int64_t kChunk = 64;  // frames read at a time
  std::vector<SystemStatistics> mine;
  together([&] {
    for (const auto& part : parts) {
      SystemStatistics st;
      st.source = part.info().source;
      st.natoms = part.info().natoms;
      st.has_force = part.info().has_force;
      st.has_virial = part.info().has_virial;
      for_my_frames(part, kChunk, [&](const System& chunk, std::int64_t) {
        st = merge(st, deepkf::compute_statistics(chunk));
      });
      mine.push_back(st);
    }
  });
  // Every rank gathers every rank's statistics and merges them in rank order: the same figures everywhere.
  std::vector<double> local;
  for (const auto& st : mine) {
    const auto packed = pack(st);
    local.insert(local.end(), packed.begin(), packed.end());
  }
  std::vector<double> all(local.size() * static_cast<std::size_t>(comm->size()));
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm->size()), local.size() * sizeof(double));
  comm->allgatherv(local.data(), all.data(), counts);
  auto of_rank = [&](int r, std::size_t i) {
    return unpack(all.data() + (static_cast<std::size_t>(r) * mine.size() + i) * kStatisticsFields, mine[i]);
  };
  std::vector<SystemStatistics> stats;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    SystemStatistics total = of_rank(0, i);
    for (int r = 1; r < comm->size(); ++r) total = merge(total, of_rank(r, i));
    stats.push_back(total);
  }
  const std::string finding = check_units(stats, what);
  if (!finding.empty()) throw DataError(finding);
}

void Trainer::Impl::check_same_data() const {
  if (comm->size() == 1) return;
  std::vector<double> local = {static_cast<double>(train.size()), static_cast<double>(valid.size()), 0.0,
                               0.0};
  for (const auto& s : train) {
    local[2] += static_cast<double>(s.nframes());
    local[3] += static_cast<double>(s.nframes() * s.info().natoms);
  }
  auto most = local;
  comm->allreduce_max(most.data(), most.size());
  // Every rank draws the same global batches and reads its share from its own view of the files: the views
  // must agree.
  if (comm->any(most != local)) {
    throw ParallelError(
        fmt::format("ranks read different training data: rank {} has {} systems, {} frames, {} atoms; "
                    "the largest figures over ranks are {}, {}, {}",
                    comm->rank(), local[0], local[2], local[3], most[0], most[2], most[3]));
  }
}

void Trainer::Impl::resolve_sel() {
  if (!mcfg.sel_auto) return;
  // DeePMD's "auto": the largest per-type neighbour count in the training data, times the factor, rounded up
  // to a multiple of 4. Every frame is scanned (the neighbour search is O(N)).
  std::vector<std::int64_t> counts(static_cast<std::size_t>(mcfg.ntypes()), 0);
  together([&] {
    for (const auto& part : train) {
      const SystemInfo& s = part.info();
      std::vector<int> types(s.atom_types.size());
      for (std::size_t i = 0; i < types.size(); ++i) {
        const auto& name = s.type_map[static_cast<std::size_t>(s.atom_types[i])];
        types[i] = static_cast<int>(std::find(mcfg.type_map.begin(), mcfg.type_map.end(), name) -
                                    mcfg.type_map.begin());
      }
      // Each rank scans its share of the frames; the maximum over ranks follows.
      for_my_frames(part, 64, [&](const System& chunk, std::int64_t) {
        for (std::int64_t f = 0; f < chunk.nframes; ++f) {
          const auto c =
              max_neighbor_counts(chunk.coord.data() + f * s.natoms * 3, s.natoms, types.data(),
                                  mcfg.ntypes(), s.periodic ? chunk.box.data() + f * 9 : nullptr, mcfg.rcut);
          for (std::size_t t = 0; t < c.size(); ++t) counts[t] = std::max(counts[t], c[t]);
        }
      });
    }
  });
  std::vector<double> reduced(counts.begin(), counts.end());
  if (comm->size() > 1) comm->allreduce_max(reduced.data(), reduced.size());
  mcfg.sel.clear();
  for (double c : reduced) {
    const auto scaled = static_cast<std::int64_t>(std::ceil(c * mcfg.sel_auto_factor - 1e-9));
    mcfg.sel.push_back(static_cast<int>((scaled + 3) / 4 * 4));
  }
  mcfg.sel_auto = false;
  log->info("sel \"auto\": max neighbours {} -> sel {}", fmt::join(reduced, " "), fmt::join(mcfg.sel, " "));
}

void Trainer::Impl::compute_statistics() {
  // davg/dstd from up to kStatFrames frames per system, the energy bias from every frame.
  constexpr std::int64_t kStatFrames = 100;
  StatisticsSums sums(mcfg.ntypes());
  for (const auto& part : train) {
    const std::int64_t stride = std::max<std::int64_t>(1, part.nframes() / kStatFrames);
    for_my_frames(part, 16, [&](const System& chunk, std::int64_t first) {
      std::vector<std::int64_t> frames(static_cast<std::size_t>(chunk.nframes));
      std::iota(frames.begin(), frames.end(), std::int64_t{0});
      Batch b = make_batch(chunk, frames, mcfg, torch::kCPU, torch::kFloat64);
      sums.add_energy(b.energy, b.atype);
      std::vector<std::int64_t> pick;
      for (std::size_t j = 0; j < frames.size(); ++j) {
        if ((first + frames[j]) % stride == 0) pick.push_back(static_cast<std::int64_t>(j));
      }
      if (pick.empty()) return;
      const auto idx = torch::tensor(pick, torch::kInt64);
      const auto rij = pair_vectors(b.coord.index_select(0, idx), b.nlist.index_select(0, idx),
                                    b.shift.index_select(0, idx), mcfg.rcut);
      sums.add_environment(environment_matrix(rij, mcfg.rcut, mcfg.rcut_smth), b.atype.index_select(0, idx));
    });
  }
  auto packed = sums.pack();
  reduce(packed);
  sums.unpack(packed);
  const auto [davg, dstd] = sums.descriptor_statistics(mcfg.nnei());
  model->set_statistics(davg, dstd);
  const auto bias = sums.energy_bias(mcfg.type_map);
  for (const auto& w : bias.warnings) log->warn("{}", w);
  model->set_energy_bias(bias.bias);
  std::string text;
  for (int t = 0; t < mcfg.ntypes(); ++t) {
    text += fmt::format("{}{} {:.4f}", t ? ", " : "", mcfg.type_map[static_cast<std::size_t>(t)],
                        bias.bias[t].item<double>());
  }
  log->info("energy bias per type (eV): {}", text);
}

void Trainer::Impl::build_optimizer() {
  params = model->parameters();
  optimizer = make_training_step(cfg, model, comm);
  log->info("{}", optimizer->describe());
}

void Trainer::Impl::setup() {
  setup_logging();
  setup_threads_and_device();
  for (const auto& key : cfg.ignored_keys) log->info("input key {} has no effect in deepkf", key);
  // Every rank opens the data (types and shapes) and checks its share of the frames; a rank that cannot
  // ends the set-up on all ranks. Frames are read again when a batch needs them, each rank its own share.
  std::vector<std::pair<std::vector<FrameSubset>, std::string>> loads;
  together([&] { loads = load_data(); });
  check_same_data();
  for (const auto& [parts, what] : loads) check_data(parts, what);
  std::vector<std::int64_t> nframes;
  for (const auto& s : train) nframes.push_back(s.nframes());
  sampler = std::make_unique<BatchSampler>(nframes, batch_size, cfg.seed);

  if (!opt.restart.empty()) {
    restore(opt.restart);
    return;
  }
  if (!opt.init_model.empty()) {
    together([&] {
      auto loaded = load_model(opt.init_model, torch::kCPU);
      mcfg = loaded.config;
      model = loaded.model;
    });
    log->info("starting from model {} ({} parameters)", opt.init_model, model->parameter_count());
  } else {
    mcfg = ModelConfig::from_json(cfg.model);
    resolve_sel();
    mcfg.validate();
    model = DeepPot(mcfg);
    compute_statistics();
  }
  model->to(device);
  build_optimizer();
}

void Trainer::Impl::restore(const std::string& path) {
  // Every rank reads the checkpoint: its model, and the covariance blocks this rank owns.
  LoadedCheckpoint ckpt;
  together([&] { ckpt = read_checkpoint(path, device); });
  mcfg = ckpt.model->config();
  model = ckpt.model;
  build_optimizer();
  if (ckpt.meta.value("optimizer", std::string()) != cfg.optimizer) {
    throw ConfigError("checkpoint '" + path + "' was written by the " +
                      ckpt.meta.value("optimizer", std::string("?")) + " optimizer, but " + cfg.file +
                      " asks for " + cfg.optimizer);
  }
  // Each rank reads its own covariance blocks from the file.
  together([&] { optimizer->load(ckpt.optimizer, ckpt.covariance_block); });
  step = ckpt.meta.at("step").get<std::int64_t>();
  sampler->seek(ckpt.meta.at("epoch").get<std::int64_t>(), ckpt.meta.at("position").get<std::int64_t>());
  valid_cursor = ckpt.meta.value("valid_cursor", std::int64_t{0});
  wall_before = ckpt.meta.value("wall_seconds", 0.0);
  log->info("restarted from {} at step {}", path, step);
}

// ----------------------------------------------------------------------------------------------- steps

Batch Trainer::Impl::local_batch(const std::vector<FrameSubset>& parts, const BatchRef& ref) const {
  const auto [begin, end] = my_share(ref.frames.size());
  std::vector<std::int64_t> mine(ref.frames.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ref.frames.begin() + static_cast<std::ptrdiff_t>(end));
  // Only this rank's frames are read from the file.
  const System frames = parts[static_cast<std::size_t>(ref.system)].read(mine);
  std::vector<std::int64_t> all(mine.size());
  std::iota(all.begin(), all.end(), std::int64_t{0});
  return make_batch(frames, all, mcfg, device, mcfg.precision);
}

ErrorMetrics Trainer::Impl::train_step(const BatchRef& ref) {
  const Batch b = local_batch(train, ref);
  // Which labels exist is a property of the system, not of this rank's share (which may be empty).
  const SystemInfo& info = train[static_cast<std::size_t>(ref.system)].info();
  const StepInput in{b, info, static_cast<std::int64_t>(ref.frames.size()),
                     static_cast<std::int64_t>(my_share(ref.frames.size()).first), step};
  return optimizer->take(in);
}

ErrorMetrics Trainer::Impl::validate(bool all_frames) {
  ErrorMetrics metrics;
  if (valid.empty()) return metrics;
  std::int64_t total = 0;
  for (const auto& s : valid) total += s.nframes();
  // numb_btch batches per display, cycling through all validation frames in order.
  const std::int64_t wanted =
      all_frames
          ? total
          : std::min<std::int64_t>(
                total, static_cast<std::int64_t>(cfg.validation_data.numb_btch) *
                           std::max(1, cfg.validation_data.batch_auto ? 1 : cfg.validation_data.batch_size));
  std::int64_t done = 0;
  std::int64_t cursor = all_frames ? 0 : valid_cursor;
  while (done < wanted) {
    // Locate the system holding frame number `cursor` of the concatenated validation set.
    std::int64_t c = cursor % total, s = 0;
    while (c >= valid[static_cast<std::size_t>(s)].nframes())
      c -= valid[static_cast<std::size_t>(s++)].nframes();
    const auto& sys = valid[static_cast<std::size_t>(s)];
    const std::int64_t n = std::min({static_cast<std::int64_t>(valid_batch_size[static_cast<std::size_t>(s)]),
                                     sys.nframes() - c, wanted - done});
    BatchRef ref{static_cast<int>(s), {}};
    for (std::int64_t f = c; f < c + n; ++f) ref.frames.push_back(f);
    const Batch b = local_batch(valid, ref);
    if (b.coord.size(0) > 0) metrics.add(model->evaluate(b.coord, b.atype, b.nlist, b.shift, false), b);
    done += n;
    cursor += n;
  }
  if (!all_frames) valid_cursor = cursor % total;
  auto packed = metrics.pack();
  reduce(packed);
  metrics.unpack(packed);
  return metrics;
}

json Trainer::Impl::provenance() const {
  json p;
  p["program"] = "deepkf 0.1.0";
  p["training_data"] = cfg.training_data.systems;
  p["validation_data"] = cfg.validation_data.systems;
  p["input"] = cfg.file;
  p["steps"] = step;
  p["optimizer"] = cfg.to_json()["optimizer"];
  p["ranks"] = comm->size();
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p["date"] = date;
  return p;
}

void Trainer::Impl::write_checkpoint_now(const std::string& path) {
  json meta;
  meta["step"] = step;
  meta["epoch"] = sampler->epoch();
  meta["position"] = sampler->position();
  meta["valid_cursor"] = valid_cursor;
  meta["optimizer"] = cfg.optimizer;
  meta["config"] = cfg.to_json();
  meta["model"] = mcfg.to_json();
  meta["provenance"] = provenance();
  meta["ranks"] = comm->size();
  // Only the root writes the file. The RLEKF covariance is streamed into it block by block from the owners
  // (the root holds at most one other rank's block at a time); a failure to write ends the run on every
  // rank, after the stream so that no rank is left waiting in it.
  torch::serialize::OutputArchive optimizer_state;
  optimizer->save(optimizer_state);
  std::unique_ptr<CheckpointWriter> writer;
  together([&] {
    if (root())
      writer = std::make_unique<CheckpointWriter>(path, model, meta, optimizer_state,
                                                  optimizer->block_sizes(), optimizer->block_dtype());
  });
  std::string failure;
  optimizer->stream_blocks([&](std::int64_t i, const torch::Tensor& block) {
    if (!failure.empty()) return;
    try {
      writer->write_block(i, block);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  together([&] {
    if (!root()) return;
    if (!failure.empty()) throw Error(failure);
    writer->commit();
  });
}

// ----------------------------------------------------------------------------------------------- loop

Trainer::Trainer(const TrainConfig& config, const TrainerOptions& options, std::shared_ptr<Communicator> comm)
    : impl_(std::make_unique<Impl>(config, options, std::move(comm))) {
  impl_->setup();
}

Trainer::~Trainer() = default;

std::int64_t Trainer::step() const { return impl_->step; }

std::vector<double> Trainer::flat_parameters() const { return flatten_cpu(impl_->params); }

std::int64_t Trainer::frames_read() const {
  std::int64_t n = 0;
  for (const auto& s : impl_->sources) n += s->frames_read();
  return n;
}

std::int64_t Trainer::covariance_bytes() const { return impl_->optimizer->covariance_bytes(); }

TrainResult Trainer::run() {
  Impl& m = *impl_;
  TrainResult result;
  StopSignal stop_guard;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const std::string lcurve_path = m.out(m.cfg.disp_file);
  const std::string ckpt_path = m.out(m.cfg.save_ckpt);
  std::ofstream lcurve;
  const bool virial_columns =
      std::any_of(m.train.begin(), m.train.end(), [](const FrameSubset& s) { return s.info().has_virial; });
  m.together([&] {
    if (!m.root()) return;
    write_text_atomically(m.out("input.resolved.json"), m.cfg.to_json().dump(2) + "\n");
    const bool append = !m.opt.restart.empty() && fs::exists(lcurve_path);
    lcurve.open(lcurve_path, append ? std::ios::app : std::ios::trunc);
    if (!lcurve) throw Error("cannot write learning curve " + lcurve_path);
    if (!append) {
      lcurve << "#  step      rmse_e_val  rmse_e_trn  rmse_f_val  rmse_f_trn";
      if (virial_columns) lcurve << "  rmse_v_val  rmse_v_trn";
      lcurve << fmt::format("  {:>10}", m.optimizer->status_name()) << "      wall_s\n";
      lcurve << "#  (energy and virial per atom: eV/atom; force: eV/A)\n";
    }
  });
  ProgressBar progress(m.step, m.cfg.numb_steps, m.root() ? m.opt.progress : 0);
  m.log->info("training from step {} to {}", m.step, m.cfg.numb_steps);

  auto display = [&](const ErrorMetrics& trn) {
    const ErrorMetrics val = m.validate(false);
    result.validation = val;
    result.training = trn;
    if (!m.root()) return;
    const double status = m.optimizer->status_value(m.step);
    lcurve << fmt::format("{:8d}  {:10.3e}  {:10.3e}  {:10.3e}  {:10.3e}", m.step, val.rmse_e(), trn.rmse_e(),
                          val.rmse_f(), trn.rmse_f());
    if (virial_columns) lcurve << fmt::format("  {:10.3e}  {:10.3e}", val.rmse_v(), trn.rmse_v());
    lcurve << fmt::format("  {:10.6f}  {:10.2f}\n", status, m.wall_before + elapsed());
    lcurve.flush();
    progress.clear();
    m.log->info(
        "step {:>7}  rmse_e val {:.3e} trn {:.3e} eV/atom  rmse_f val {:.3e} trn {:.3e} eV/A  {} {:.6g}",
        m.step, val.rmse_e(), trn.rmse_e(), val.rmse_f(), trn.rmse_f(), m.optimizer->status_name(), status);
  };

  const std::int64_t end = m.opt.pause_at > 0 ? std::min(m.opt.pause_at, m.cfg.numb_steps) : m.cfg.numb_steps;
  while (m.step < end) {
    const BatchRef ref = m.sampler->next();
    ErrorMetrics trn = m.train_step(ref);
    ++m.step;
    const bool last = m.step == end;
    if (m.step % m.cfg.disp_freq == 0 || last || m.step == 1) {
      if (!m.optimizer->batch_errors()) {
        // Errors of the training batch on the weights after the update.
        const Batch b = m.local_batch(m.train, ref);
        trn = ErrorMetrics{};
        if (b.coord.size(0) > 0) trn.add(m.model->evaluate(b.coord, b.atype, b.nlist, b.shift, false), b);
      }
      auto packed = trn.pack();
      m.reduce(packed);
      trn.unpack(packed);
      display(trn);
    }
    progress.update(m.step, fmt::format("rmse_f {:.3e}", result.training.rmse_f()));
    const bool stop = m.comm->any(StopSignal::requested());
    if (m.step % m.cfg.save_freq == 0 || last || stop) {
      m.write_checkpoint_now(ckpt_path);
      result.checkpoint = ckpt_path;
    }
    if (stop) {
      progress.clear();
      m.log->info("stopped by signal {} at step {}; checkpoint {} (continue with --restart)",
                  StopSignal::signal_number(), m.step, ckpt_path);
      result.interrupted = true;
      break;
    }
  }
  progress.finish();
  result.wall_seconds = elapsed();
  if (!result.interrupted && !m.valid.empty()) {
    // The displays sample numb_btch batches; the final figure covers every validation frame.
    result.validation = m.validate(true);
    const auto& v = result.validation;
    m.log->info("validation on all {} frames: rmse_e {:.3e} eV/atom, rmse_f {:.3e} eV/A{}", v.e_count,
                v.rmse_e(), v.rmse_f(),
                v.has_virial() ? fmt::format(", rmse_v {:.3e} eV/atom", v.rmse_v()) : std::string());
  }
  result.steps = m.step;
  if (!result.interrupted && m.opt.write_model) {
    m.together([&] {
      if (!m.root()) return;
      result.model = m.out("model.pt");
      save_model(result.model, m.model, m.provenance());
      m.log->info("model written to {}", result.model);
    });
  }
  m.comm->barrier();
  return result;
}

}  // namespace deepkf
