#pragma once
// Checkpoints written while training goes on. A save writes the small part of the checkpoint (record,
// model, optimizer state) at once; rank 0 copies the covariance into a host buffer kept for the run, and a
// thread writes it to the file and renames the file into place while the next steps run. The next save,
// or wait(), waits for that thread. Worth it where writing the covariance takes much longer than copying
// it (the water reference model's 19.2 GiB: about 25 s to disk against about 2 s in memory) and the host
// has the memory for a second copy; the run's last checkpoint is written before save() returns.
// Where the host has not that memory, a journal checkpoint (src/train/JournalCheckpoint.hpp) writes the live
// covariance block by block while training goes on and completes at a later step (poll()).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "optim/TrainingStep.hpp"
#include "src/core/Communicator.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/JournalCheckpoint.hpp"
#include "src/train/WeightAverage.hpp"

namespace deepkf {

struct PendingCheckpoint;

class CheckpointSaver {
 public:
  // kAuto: in the background when the covariance takes at least kMinBackgroundBytes and the host's
  // available memory (src/core/HostMemory.hpp) holds a copy of it with 1 GiB to spare; where it does not,
  // by a journal on one rank with the covariance in host memory; otherwise at once. kJournal: by a journal
  // where it can be kept, at once otherwise.
  enum class Mode { kAuto, kBackground, kForeground, kJournal };
  static constexpr std::int64_t kMinBackgroundBytes = std::int64_t{64} << 20;

  // on_written(path, step, bytes, seconds): rank 0, from the writer's thread, when a background write
  // has completed (`seconds` since the save began).
  using WrittenCallback = std::function<void(const std::string&, std::int64_t, std::int64_t, double)>;
  CheckpointSaver(Mode mode, WrittenCallback on_written);
  ~CheckpointSaver();  // waits for a write in flight; its failure then leaves the previous checkpoint
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;

  struct Report {
    bool background = false;  // the covariance is being written by the thread
    bool journal = false;     // ... from the live blocks (a journal checkpoint), completed by a later poll()
    double waited = 0.0;      // seconds this save kept training waiting (a previous write's end included)
    std::int64_t bytes = -1;  // rank 0, written at once: the file's size (-1: unknown, or in the background)
    // A journal checkpoint completed by this call: the step it began at and the seconds since then.
    std::int64_t begun_at = -1;
    double seconds = 0.0;
  };
  // Collective (write_training_checkpoint). `last`: the file is complete when save() returns.
  Report save(const std::string& path, std::int64_t step_number, const DeepPot& model,
              const nlohmann::json& meta, TrainingStep& step, Communicator& comm,
              const WeightAverage* average, bool last);
  // Collective: waits for a write in flight; when it failed, every rank throws (Error on rank 0).
  void wait(Communicator& comm);
  // After every step: completes a journal checkpoint whose blocks are all written, with the run's state
  // now (meta() gives its record); returns what a save reports, begun_at set, or nothing. One whose kept
  // changes outgrow the memory to spare (JournalCheckpoint::journal_full) is completed too, waiting for its
  // blocks.
  std::optional<Report> poll(const DeepPot& model, const std::function<nlohmann::json()>& meta,
                             const WeightAverage* average);

 private:
  bool use_background(const TrainingStep& step) const;
  bool use_journal(const TrainingStep& step, const Communicator& comm, bool last) const;
  Report complete_journal(const DeepPot& model, const nlohmann::json& meta, const WeightAverage* average);
  void join();  // rank-local

  Mode mode_;
  WrittenCallback on_written_;
  torch::Tensor buffer_;  // rank 0: the covariance's copy, kept from the first background save on
  std::thread writer_;
  std::mutex mutex_;
  std::string failure_;                         // the writer's error, read after join()
  std::unique_ptr<JournalCheckpoint> journal_;  // a journal checkpoint in flight
  std::int64_t journal_step_ = 0;               // the step it began at
  std::chrono::steady_clock::time_point journal_start_;
};

// "auto" (kAuto), true (kBackground), false (kForeground) or "journal" (kJournal):
// training.save_in_background.
CheckpointSaver::Mode checkpoint_saver_mode(const nlohmann::json& value);

}  // namespace deepkf
