#include "src/train/DataSetup.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "src/core/Error.hpp"
#include "src/core/Together.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/data/SystemStatistics.hpp"
#include "src/geometry/NeighborList.hpp"
#include "src/model/Batch.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/Statistics.hpp"

namespace deepkf {
namespace fs = std::filesystem;

namespace {

// Opening and checking the data: the input, the communicator, the log and the data being filled.
struct Setup {
  const TrainConfig& cfg;
  Communicator& comm;
  spdlog::logger& log;
  TrainingData data;

  // Opens the data and splits it; no communication (run inside together()). Returns each load as opened
  // (before any split) with the paths that name it, for check_data.
  std::vector<std::pair<std::vector<FrameSubset>, std::string>> load_data();
  // Reads this rank's share of every frame of `parts` once: checks the values (a bad number or cell fails
  // here, not mid-run) and judges the units over all ranks (check_units), naming `what`.
  void check_data(const std::vector<FrameSubset>& parts, const std::string& what);
  // ParallelError unless every rank loaded the same number of systems, frames and atoms.
  void check_same_data() const;
};

std::vector<std::pair<std::vector<FrameSubset>, std::string>> Setup::load_data() {
  std::vector<std::pair<std::vector<FrameSubset>, std::string>> loads;
  const auto type_map = cfg.model.value("type_map", std::vector<std::string>{});
  const auto train_paths = resolve_system_paths(cfg.training_data.systems, cfg.base_dir,
                                                "training.training_data.systems", cfg.file);
  const std::string origin = "model.type_map of " + cfg.file;
  OpenedData training = open_dataset(train_paths, type_map, origin);
  data.sources = training.systems;
  data.train = whole(training.systems);
  // Each system's repeat count and batch size are those of the path it was found under (kept through a
  // validation split).
  std::vector<std::size_t> path_of_train = training.path_index, path_of_valid;
  loads.emplace_back(data.train, describe_paths(train_paths));
  if (!cfg.validation_data.systems.empty()) {
    const auto valid_paths = resolve_system_paths(cfg.validation_data.systems, cfg.base_dir,
                                                  "training.validation_data.systems", cfg.file);
    OpenedData validation = open_dataset(valid_paths, type_map, origin);
    data.sources.insert(data.sources.end(), validation.systems.begin(), validation.systems.end());
    data.valid = whole(validation.systems);
    path_of_valid = validation.path_index;
    loads.emplace_back(data.valid, describe_paths(valid_paths));
  } else if (cfg.validation_fraction > 0.0) {
    std::vector<std::int64_t> nframes;
    for (const auto& s : data.train) nframes.push_back(s.nframes());
    const auto split = validation_split(cfg, nframes);
    std::vector<FrameSubset> whole_train = std::move(data.train);
    std::vector<std::size_t> whole_paths = std::move(path_of_train);
    data.train.clear();
    path_of_train.clear();
    for (const auto& p : split.train) {
      data.train.push_back(FrameSubset{whole_train[static_cast<std::size_t>(p.system)].source, p.frames});
      path_of_train.push_back(whole_paths[static_cast<std::size_t>(p.system)]);
    }
    for (const auto& p : split.validation) {
      data.valid.push_back(FrameSubset{whole_train[static_cast<std::size_t>(p.system)].source, p.frames});
      path_of_valid.push_back(
          0);  // validation_data's batch size (a number or a rule: no list without systems)
    }
  }
  for (const auto& s : data.train) {
    if (s.nframes() < 1) {
      throw ConfigError("training system " + s.info().source + " (in 'training.training_data.systems' of " +
                        cfg.file + ") has no frames");
    }
  }
  for (std::size_t i = 0; i < data.train.size(); ++i) {
    const std::size_t path = path_of_train[i];
    data.repeat.push_back(cfg.training_data.repeat.empty() ? 1 : cfg.training_data.repeat[path]);
    data.batch_size.push_back(cfg.training_data.batch_for(data.train[i].info().natoms, path));
  }
  for (std::size_t i = 0; i < data.valid.size(); ++i)
    data.valid_batch_size.push_back(
        cfg.validation_data.batch_for(data.valid[i].info().natoms, path_of_valid[i]));
  std::int64_t frames = 0, vframes = 0;
  for (const auto& s : data.train) frames += s.nframes();
  for (const auto& s : data.valid) vframes += s.nframes();
  log.info("training data: {} systems, {} frames; validation: {} systems, {} frames", data.train.size(),
           frames, data.valid.size(), vframes);
  if (std::any_of(data.repeat.begin(), data.repeat.end(), [](int r) { return r > 1; })) {
    std::int64_t visits = 0;
    for (std::size_t i = 0; i < data.train.size(); ++i) visits += data.train[i].nframes() * data.repeat[i];
    log.info("training_data.repeat: {} frame visits per epoch ({} frames)", visits, frames);
  }
  return loads;
}

void Setup::check_data(const std::vector<FrameSubset>& parts, const std::string& what) {
  constexpr std::int64_t kChunk = 64;  // frames read at a time
  std::vector<SystemStatistics> mine;
  together(comm, [&] {
    for (const auto& part : parts) {
      SystemStatistics st;
      st.source = part.info().source;
      st.natoms = part.info().natoms;
      st.has_force = part.info().has_force;
      st.has_virial = part.info().has_virial;
      for_rank_frames(part, kChunk, comm, [&](const System& chunk, std::int64_t) {
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
  std::vector<double> all(local.size() * static_cast<std::size_t>(comm.size()));
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), local.size() * sizeof(double));
  comm.allgatherv(local.data(), all.data(), counts);
  auto of_rank = [&](int r, std::size_t i) {
    return unpack(all.data() + (static_cast<std::size_t>(r) * mine.size() + i) * kStatisticsFields, mine[i]);
  };
  std::vector<SystemStatistics> stats;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    SystemStatistics total = of_rank(0, i);
    for (int r = 1; r < comm.size(); ++r) total = merge(total, of_rank(r, i));
    stats.push_back(total);
  }
  const std::string finding = check_units(stats, what);
  if (!finding.empty()) throw DataError(finding);
}

void Setup::check_same_data() const {
  if (comm.size() == 1) return;
  std::vector<double> local = {static_cast<double>(data.train.size()), static_cast<double>(data.valid.size()),
                               0.0, 0.0};
  for (const auto& s : data.train) {
    local[2] += static_cast<double>(s.nframes());
    local[3] += static_cast<double>(s.nframes() * s.info().natoms);
  }
  auto most = local;
  comm.allreduce_max(most.data(), most.size());
  // Every rank draws the same global batches and reads its share from its own view of the files: the views
  // must agree.
  if (comm.any(most != local)) {
    throw ParallelError(
        fmt::format("ranks read different training data: rank {} has {} systems, {} frames, {} atoms; "
                    "the largest figures over ranks are {}, {}, {}",
                    comm.rank(), local[0], local[2], local[3], most[0], most[2], most[3]));
  }
}

}  // namespace

SplitIndices validation_split(const TrainConfig& cfg, const std::vector<std::int64_t>& nframes) {
  return split_frames(nframes, cfg.validation_fraction,
                      cfg.validation_split == "system" ? SplitMode::kSystem : SplitMode::kFrame, cfg.seed);
}

std::vector<std::string> resolve_system_paths(const std::vector<std::string>& paths, const std::string& base,
                                              const std::string& key, const std::string& file) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    // "file.h5#group" keeps its group suffix; only the file part is resolved.
    const auto hash = p.find('#');
    const std::string part = p.substr(0, hash);
    const std::string group = hash == std::string::npos ? "" : p.substr(hash);
    fs::path resolved = fs::path(part);
    std::error_code ec;
    if (part.empty()) throw ConfigError("'" + key + "' in " + file + " holds an empty path");
    if (resolved.is_absolute() && !fs::exists(resolved, ec))
      throw ConfigError("'" + key + "' in " + file + " names \"" + p + "\", which does not exist");
    if (!resolved.is_absolute()) {
      const fs::path by_input = (fs::path(base) / part).lexically_normal();
      const fs::path by_cwd = fs::absolute(part).lexically_normal();
      if (fs::exists(by_input, ec) || by_input == by_cwd) {
        resolved = by_input;  // when missing, the reader names the one place
      } else if (fs::exists(by_cwd, ec)) {
        resolved = by_cwd;
      } else {
        throw ConfigError("'" + key + "' in " + file + " names \"" + p + "\", which is neither " +
                          by_input.string() + " (next to the input file) nor " + by_cwd.string() +
                          " (in the current directory)");
      }
    }
    out.push_back(resolved.lexically_normal().string() + group);
  }
  return out;
}

std::pair<std::size_t, std::size_t> rank_share(std::size_t n, const Communicator& comm) {
  const auto r = static_cast<std::size_t>(comm.rank());
  const auto size = static_cast<std::size_t>(comm.size());
  return {n * r / size, n * (r + 1) / size};
}

TrainingData open_training_data(const TrainConfig& cfg, Communicator& comm, spdlog::logger& log) {
  Setup s{cfg, comm, log, {}};
  // Every rank opens the data (types and shapes) and checks its share of the frames; a rank that cannot
  // ends the set-up on all ranks. Frames are read again when a batch needs them, each rank its own share.
  std::vector<std::pair<std::vector<FrameSubset>, std::string>> loads;
  together(comm, [&] { loads = s.load_data(); });
  s.check_same_data();
  for (const auto& [parts, what] : loads) s.check_data(parts, what);
  return std::move(s.data);
}

void resolve_sel(ModelConfig& mcfg, const std::vector<FrameSubset>& train, Communicator& comm,
                 spdlog::logger& log) {
  if (mcfg.hybrid()) {
    // each descriptor of the list with its own cutoff, then the list the model reads them from
    for (auto& part : mcfg.parts) resolve_sel(part, train, comm, log);
    mcfg.combine_parts();
    return;
  }
  const auto groups = static_cast<std::size_t>(mcfg.neighbour_groups());
  if (mcfg.rcut <= 0.0 || (!mcfg.sel_auto && mcfg.sel.size() != groups)) return;  // validate()
  // One scan of every training frame (the neighbour search is O(N)): the largest per-type neighbour count
  // within rcut, and, for a given sel, the neighbours it leaves out. With "auto" the slots are 0 and every
  // neighbour counts as cut.
  const std::vector<int> slots = mcfg.sel_auto ? std::vector<int>(groups, 0) : mcfg.sel;
  std::vector<std::int64_t> counts(groups, 0);
  // neighbours within rcut, those beyond sel, frames with any beyond sel, frames
  std::vector<double> cut = {0.0, 0.0, 0.0, 0.0};
  together(comm, [&] {
    for (const auto& part : train) {
      const SystemInfo& s = part.info();
      std::vector<int> types(s.atom_types.size());
      for (std::size_t i = 0; i < types.size(); ++i) {
        const auto& name = s.type_map[static_cast<std::size_t>(s.atom_types[i])];
        types[i] = static_cast<int>(std::find(mcfg.type_map.begin(), mcfg.type_map.end(), name) -
                                    mcfg.type_map.begin());
      }
      types = list_types(mcfg, types);
      // Each rank scans its share of the frames; the maximum and the sums over ranks follow.
      for_rank_frames(part, 64, comm, [&](const System& chunk, std::int64_t) {
        for (std::int64_t f = 0; f < chunk.nframes; ++f) {
          const NeighborList nl =
              build_neighbor_list(chunk.coord.data() + f * s.natoms * 3, s.natoms, types.data(),
                                  s.periodic ? chunk.box.data() + f * 9 : nullptr, mcfg.rcut, slots);
          for (std::size_t t = 0; t < counts.size(); ++t) counts[t] = std::max(counts[t], nl.max_count[t]);
          const auto kept =
              std::count_if(nl.index.begin(), nl.index.end(), [](std::int64_t j) { return j >= 0; });
          cut[0] += static_cast<double>(kept + nl.ndropped);
          cut[1] += static_cast<double>(nl.ndropped);
          cut[2] += nl.ndropped > 0 ? 1.0 : 0.0;
          cut[3] += 1.0;
        }
      });
    }
  });
  std::vector<double> reduced(counts.begin(), counts.end());
  if (comm.size() > 1) {
    comm.allreduce_max(reduced.data(), reduced.size());
    comm.allreduce_sum(cut.data(), cut.size());
  }
  const auto most = std::vector<std::int64_t>(reduced.begin(), reduced.end());
  if (mcfg.sel_auto) {
    mcfg.sel = auto_sel(most, mcfg.sel_auto_factor);
    mcfg.sel_auto = false;
    log.info("sel \"auto\": max neighbours {} -> sel {}", fmt::join(reduced, " "), fmt::join(mcfg.sel, " "));
  } else if (cut[1] > 0.0) {
    // DeePMD-kit keeps the nearest sel[t] neighbours of each type: the rest are invisible to the model.
    log.warn(
        "sel [{}] is smaller than the training data's neighbour counts within rcut {} A (at most [{}] "
        "per atom, types {}): {} of {} neighbours ({:.2f} %) in {} of {} frames are cut and not seen by "
        "the model; sel \"auto\" would give [{}]",
        fmt::join(mcfg.sel, ", "), mcfg.rcut, fmt::join(most, ", "),
        mcfg.mixed_types() ? std::string("all together") : fmt::format("{}", fmt::join(mcfg.type_map, " ")),
        cut[1], cut[0], 100.0 * cut[1] / cut[0], cut[2], cut[3], fmt::join(auto_sel(most), ", "));
  }
}

namespace {

// This batch's closest neighbours per type pair into `range`.
void add_closest(TrainingRange& range, const Batch& b, const ModelConfig& mcfg) {
  const auto rij = pair_vectors(b.coord, b.nlist, b.shift, mcfg.rcut);
  range.add(closest_neighbours(rij, b.nlist, b.atype, mcfg), static_cast<double>(b.coord.size(0)));
}

// The ranks' ranges combined (minimum distances, summed frames), merged into the model's and logged.
void finish_range(TrainingRange range, DeepPot& model, const ModelConfig& mcfg, Communicator& comm,
                  spdlog::logger& log) {
  range.reduce(
      [&](std::vector<double>& d) {
        // min over ranks as -max(-d)
        for (auto& x : d) x = -x;
        comm.allreduce_max(d.data(), d.size());
        for (auto& x : d) x = -x;
      },
      [&](double& frames) { comm.allreduce_sum(&frames, 1); });
  range.merge(model->training_range());
  model->set_training_range(range);
  std::vector<std::string> pairs;
  for (int c = 0; c < mcfg.ntypes(); ++c) {
    for (int t = c; t < mcfg.ntypes(); ++t) {
      const double d = std::min(range.min_distance(c, t), range.min_distance(t, c));
      pairs.push_back(fmt::format("{}-{} {}", mcfg.type_map[static_cast<std::size_t>(c)],
                                  mcfg.type_map[static_cast<std::size_t>(t)],
                                  std::isfinite(d) ? fmt::format("{:.3f}", d) : std::string("none")));
    }
  }
  log.info("closest neighbours within rcut in the training data (A): {}", fmt::join(pairs, ", "));
}

}  // namespace

void set_statistics(DeepPot& model, const ModelConfig& mcfg, const std::vector<FrameSubset>& train,
                    Communicator& comm, spdlog::logger& log) {
  // davg/dstd from up to kStatFrames frames per system, the energy bias from every frame.
  constexpr std::int64_t kStatFrames = 100;
  StatisticsSums sums(mcfg.ntypes());
  TrainingRange range(mcfg.ntypes());
  // davg/dstd per descriptor (a hybrid's parts each from its own slots and cutoff), in sums of their own
  auto env_sums = descriptor_sums(mcfg);
  for (const auto& part : train) {
    const std::int64_t stride = std::max<std::int64_t>(1, part.nframes() / kStatFrames);
    for_rank_frames(part, 16, comm, [&](const System& chunk, std::int64_t first) {
      std::vector<std::int64_t> frames(static_cast<std::size_t>(chunk.nframes));
      std::iota(frames.begin(), frames.end(), std::int64_t{0});
      Batch b = make_batch(chunk, frames, mcfg, torch::kCPU, torch::kFloat64);
      sums.add_energy(b.energy, b.atype);
      add_closest(range, b, mcfg);
      std::vector<std::int64_t> pick;
      for (std::size_t j = 0; j < frames.size(); ++j) {
        if ((first + frames[j]) % stride == 0) pick.push_back(static_cast<std::int64_t>(j));
      }
      if (pick.empty()) return;
      const auto idx = torch::tensor(pick, torch::kInt64);
      const auto rij = pair_vectors(b.coord.index_select(0, idx), b.nlist.index_select(0, idx),
                                    b.shift.index_select(0, idx), mcfg.rcut);
      add_environments(env_sums, rij, b.atype.index_select(0, idx), mcfg);
    });
  }
  const auto reduce = [&](StatisticsSums& x) {
    auto packed = x.pack();
    if (comm.size() > 1) comm.allreduce_sum(packed.data(), packed.size());
    x.unpack(packed);
  };
  reduce(sums);
  for (auto& s : env_sums) reduce(s);
  const auto [davg, dstd] = descriptor_statistics(env_sums, mcfg);
  model->set_statistics(davg, dstd);
  const auto bias = sums.energy_bias(mcfg.type_map);
  for (const auto& w : bias.warnings) log.warn("{}", w);
  model->set_energy_bias(bias.bias);
  std::string text;
  for (int t = 0; t < mcfg.ntypes(); ++t) {
    text += fmt::format("{}{} {:.4f}", t ? ", " : "", mcfg.type_map[static_cast<std::size_t>(t)],
                        bias.bias[t].item<double>());
  }
  log.info("energy bias per type (eV): {}", text);
  finish_range(range, model, mcfg, comm, log);
}

void record_training_range(DeepPot& model, const ModelConfig& mcfg, const std::vector<FrameSubset>& train,
                           Communicator& comm, spdlog::logger& log) {
  TrainingRange range(mcfg.ntypes());
  for (const auto& part : train) {
    for_rank_frames(part, 16, comm, [&](const System& chunk, std::int64_t) {
      std::vector<std::int64_t> frames(static_cast<std::size_t>(chunk.nframes));
      std::iota(frames.begin(), frames.end(), std::int64_t{0});
      add_closest(range, make_batch(chunk, frames, mcfg, torch::kCPU, torch::kFloat64), mcfg);
    });
  }
  finish_range(range, model, mcfg, comm, log);
}

}  // namespace deepkf
