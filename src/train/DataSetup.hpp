#pragma once
// Set-up of a run's data and model statistics, on every rank: open the training and validation systems
// (frames stay in the files; each rank reads its share when needed), split off validation frames when asked,
// check values and units over all ranks, resolve sel "auto", and compute the descriptor statistics and the
// energy bias. All collective.
#include <spdlog/logger.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf {

struct TrainingData {
  std::vector<std::shared_ptr<FrameSource>> sources;  // every system opened (training and validation)
  std::vector<FrameSubset> train;
  std::vector<FrameSubset> valid;
  std::vector<int> batch_size;        // per training system
  std::vector<int> repeat;            // per training system: visits per epoch (training_data.repeat)
  std::vector<int> valid_batch_size;  // per validation system
};

// Opens, splits and checks cfg's data. Throws DataError or ConfigError naming the file, or ParallelError
// when another rank failed or the ranks see different data.
TrainingData open_training_data(const TrainConfig& cfg, Communicator& comm, spdlog::logger& log);

// The validation split training.validation_fraction makes of training systems with nframes[i] frames: the
// input's split mode (validation_split) and training.seed, as training takes it and `deepkf test
// --valid-data` repeats it.
SplitIndices validation_split(const TrainConfig& cfg, const std::vector<std::int64_t>& nframes);

// Absolute forms of an input's system paths: a relative path is looked up next to the input file (base)
// first, then in the current directory (where DeePMD-kit looks); "file.h5#group" keeps its group. Throws
// ConfigError naming `key`, `file` and both places when neither has it.
std::vector<std::string> resolve_system_paths(const std::vector<std::string>& paths, const std::string& base,
                                              const std::string& key, const std::string& file);

// This rank's contiguous share [begin, end) of n frames: [n r / R, n (r + 1) / R).
std::pair<std::size_t, std::size_t> rank_share(std::size_t n, const Communicator& comm);

// Calls f(frames, first) for chunks of at most `chunk` frames of this rank's share of `part`; first is the
// position in `part` of the chunk's first frame.
template <typename F>
void for_rank_frames(const FrameSubset& part, std::int64_t chunk, const Communicator& comm, F&& f) {
  const auto [begin, end] = rank_share(static_cast<std::size_t>(part.nframes()), comm);
  for (auto first = static_cast<std::int64_t>(begin); first < static_cast<std::int64_t>(end);
       first += chunk) {
    const std::int64_t last = std::min(static_cast<std::int64_t>(end), first + chunk);
    f(part.read_range(first, last), first);
  }
}

// DeePMD's sel "auto" from the training frames (each rank scans its share; the maximum over ranks): sets
// mcfg.sel and clears mcfg.sel_auto. When sel is given, the same scan counts the neighbours within rcut that
// sel leaves out, and a warning says how many (and in how many frames) when there are any.
void resolve_sel(ModelConfig& mcfg, const std::vector<FrameSubset>& train, Communicator& comm,
                 spdlog::logger& log);

// The descriptor's davg/dstd (up to 100 frames per system) and the per-type energy bias (every frame),
// summed over the ranks' shares, set on `model`; with the training range (closest neighbours per type pair,
// every frame; TrainingRange) merged into the model's.
void set_statistics(DeepPot& model, const ModelConfig& mcfg, const std::vector<FrameSubset>& train,
                    Communicator& comm, spdlog::logger& log);

// Only the training range of `train` (every frame), merged into the model's: for a run that starts from a
// model file (--init-model), whose statistics are kept.
void record_training_range(DeepPot& model, const ModelConfig& mcfg, const std::vector<FrameSubset>& train,
                           Communicator& comm, spdlog::logger& log);

}  // namespace deepkf
