#pragma once
// A checkpoint written from the live covariance while training goes on, with no second copy of P (format 5,
// src/train/Checkpoint.hpp): for a covariance that fills the host's memory, where the copy of
// CheckpointSaver's background write does not fit and writing it at once keeps training waiting for the
// disk (about 25 s for the 19.2 GiB of DeePMD-kit's water example on this project's 2-core machine).
//
// start() makes the covariance keep its changes (optim/CovarianceJournal.hpp) and starts a thread that
// copies one block at a time (under the covariance's lock, as long as a memory copy of the block takes) and
// appends it to the file, while the training thread goes on changing P. Once every block is written,
// complete() writes the run record, model and optimizer state as they are then, with the changes the written
// blocks miss, and renames the file into place: the checkpoint is of the step at which it completes, and a
// run restored from it goes on bit for bit as the run that wrote it.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "optim/TrainingStep.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/WeightAverage.hpp"

namespace deepkf {

class JournalCheckpoint {
 public:
  // Starts writing `path` from `step`'s covariance (one rank). Null when the step keeps no journal
  // (TrainingStep::begin_journal: Adam, several ranks, blocks on a device); nothing is started then.
  static std::unique_ptr<JournalCheckpoint> start(const std::string& path, TrainingStep& step);
  ~JournalCheckpoint();  // stops the thread after its current block; the file is left incomplete (removed)
  JournalCheckpoint(const JournalCheckpoint&) = delete;
  JournalCheckpoint& operator=(const JournalCheckpoint&) = delete;

  // Every block is in the file (or the thread failed): complete() will not wait.
  bool blocks_written() const { return done_.load(); }
  // The changes kept meanwhile have outgrown what the host had to spare when the write began (half of it,
  // at least 256 MiB): complete() should be called now, and wait for the disk, rather than let them grow.
  bool journal_full() const { return step_.journal_bytes() > journal_limit_; }
  // Waits for the blocks, then writes the rest at the run's state now and renames the file into place.
  // Throws Error when the file cannot be written.
  void complete(const DeepPot& model, nlohmann::json meta, const WeightAverage* average);
  const std::string& path() const { return path_; }

 private:
  JournalCheckpoint(const std::string& path, TrainingStep& step);
  void write_blocks();  // the thread
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  TrainingStep& step_;
  std::vector<std::int64_t> sizes_;
  torch::ScalarType dtype_;
  AtomicFile file_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out_{nullptr, &std::fclose};
  std::uint64_t header_room_ = 0;  // bytes kept for the header, which complete() writes
  std::int64_t journal_limit_ = 0;
  std::vector<std::string> crcs_;
  std::vector<std::int64_t> held_;  // per block: the changes its written values hold
  std::string failure_;
  std::atomic<bool> done_{false};
  std::atomic<bool> stop_{false};
  bool ended_ = false;  // the step's journal ended (complete())
  std::thread thread_;
};

}  // namespace deepkf
