#include "src/train/CheckpointSaver.hpp"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>

#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"
#include "src/core/Together.hpp"
#include "src/train/Checkpoint.hpp"

namespace deepkf {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Values in the packed triangles of all covariance blocks.
std::int64_t covariance_values(const TrainingStep& step) {
  std::int64_t values = 0;
  for (const auto n : step.block_sizes()) values += packed::triangle_size(n);
  return values;
}

// Bytes of all covariance blocks.
std::int64_t covariance_bytes(const TrainingStep& step) {
  return covariance_values(step) * static_cast<std::int64_t>(c10::elementSize(step.block_dtype()));
}

// The size of the file at `path`, -1 when it cannot be read.
std::int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<std::int64_t>(bytes);
}

}  // namespace

CheckpointSaver::Mode checkpoint_saver_mode(const nlohmann::json& value) {
  if (value.is_boolean())
    return value.get<bool>() ? CheckpointSaver::Mode::kBackground : CheckpointSaver::Mode::kForeground;
  if (value == "journal") return CheckpointSaver::Mode::kJournal;
  return CheckpointSaver::Mode::kAuto;
}

CheckpointSaver::CheckpointSaver(Mode mode, WrittenCallback on_written)
    : mode_(mode), on_written_(std::move(on_written)) {}

CheckpointSaver::~CheckpointSaver() {
  journal_.reset();  // an unfinished journal checkpoint leaves the previous file in place
  join();
}

void CheckpointSaver::join() {
  if (writer_.joinable()) writer_.join();
}

bool CheckpointSaver::use_background(const TrainingStep& step) const {
  if (mode_ == Mode::kForeground || mode_ == Mode::kJournal) return false;
  const std::int64_t bytes = covariance_bytes(step);
  if (bytes == 0) return false;  // nothing large to write
  if (mode_ == Mode::kBackground || buffer_.defined()) return true;
  const std::int64_t available = available_host_memory();
  return bytes >= kMinBackgroundBytes && available >= 0 && available >= bytes + (std::int64_t{1} << 30);
}

void CheckpointSaver::wait(Communicator& comm) {
  join();
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure.swap(failure_);
  }
  together(comm, [&] {
    if (!failure.empty()) throw Error(failure);
  });
}

bool CheckpointSaver::use_journal(const TrainingStep& step, const Communicator& comm, bool last) const {
  if (last || comm.size() != 1 || mode_ == Mode::kForeground || mode_ == Mode::kBackground) return false;
  if (mode_ == Mode::kJournal) return true;
  const std::int64_t bytes = covariance_bytes(step);
  return bytes >= kMinBackgroundBytes && !buffer_.defined() && !use_background(step);
}

CheckpointSaver::Report CheckpointSaver::complete_journal(const DeepPot& model, const nlohmann::json& meta,
                                                          const WeightAverage* average) {
  const auto start = Clock::now();
  auto journal = std::move(journal_);
  Report report;
  report.begun_at = journal_step_;
  journal->complete(model, meta, average);
  report.waited = seconds_since(start);
  report.seconds = seconds_since(journal_start_);
  report.bytes = file_bytes(journal->path());
  return report;
}

std::optional<CheckpointSaver::Report> CheckpointSaver::poll(const DeepPot& model,
                                                             const std::function<nlohmann::json()>& meta,
                                                             const WeightAverage* average) {
  if (!journal_ || !(journal_->blocks_written() || journal_->journal_full())) return std::nullopt;
  return complete_journal(model, meta(), average);
}

CheckpointSaver::Report CheckpointSaver::save(const std::string& path, std::int64_t step_number,
                                              const DeepPot& model, const nlohmann::json& meta,
                                              TrainingStep& step, Communicator& comm,
                                              const WeightAverage* average, bool last) {
  const auto start = Clock::now();
  // A journal checkpoint still in flight (one rank) becomes this save's: its blocks are waited for and it
  // is completed at this step.
  if (journal_) return complete_journal(model, meta, average);
  wait(comm);  // one write at a time: the previous one may still be renaming its file over `path`
  Report report;
  const bool root = comm.rank() == 0;
  if (use_journal(step, comm, last)) {
    journal_ = JournalCheckpoint::start(path, step);
    if (journal_) {
      journal_step_ = step_number;
      journal_start_ = start;
      report.background = report.journal = true;
      report.waited = seconds_since(start);
      return report;
    }
  }
  report.background = root && !last && use_background(step);
  if (report.background && !buffer_.defined()) {
    const std::int64_t values = covariance_values(step);
    buffer_ = torch::empty({values}, torch::TensorOptions().dtype(step.block_dtype()));
    advise_huge_pages(buffer_.data_ptr(), values * static_cast<std::int64_t>(buffer_.element_size()));
  }
  auto pending = write_training_checkpoint(path, model, meta, step, comm, average,
                                           report.background ? buffer_ : torch::Tensor());
  report.waited = seconds_since(start);
  if (!pending) {
    if (root) report.bytes = file_bytes(path);
    return report;
  }
  // The thread owns the pending file; it reads buffer_, which no one writes until the next save joins it.
  writer_ = std::thread([this, pending = std::move(pending), path, step_number, start]() mutable {
    try {
      pending->complete();
      if (on_written_) on_written_(path, step_number, file_bytes(path), seconds_since(start));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = e.what();
    }
  });
  return report;
}

}  // namespace deepkf
