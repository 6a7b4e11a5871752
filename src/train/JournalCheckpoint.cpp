#include "src/train/JournalCheckpoint.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/core/Checksum.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"
#include "src/train/Checkpoint.hpp"

namespace deepkf {
namespace {

// Room for the numbers complete() fills in (offsets and sizes of up to 20 digits each).
constexpr std::uint64_t kHeaderSlack = 128;

}  // namespace

std::unique_ptr<JournalCheckpoint> JournalCheckpoint::start(const std::string& path, TrainingStep& step) {
  if (step.block_sizes().empty() || !step.begin_journal()) return nullptr;
  try {
    return std::unique_ptr<JournalCheckpoint>(new JournalCheckpoint(path, step));
  } catch (...) {
    step.end_journal();
    throw;
  }
}

JournalCheckpoint::JournalCheckpoint(const std::string& path, TrainingStep& step)
    : path_(path),
      step_(step),
      sizes_(step.block_sizes()),
      dtype_(step.block_dtype()),
      file_(path),
      crcs_(sizes_.size(), kCheckpointNoChecksum),
      held_(sizes_.size(), 0) {
  // The header with zeros where complete() puts the offsets, and spaces after it up to the room kept.
  journal_limit_ = std::max<std::int64_t>(std::int64_t{256} << 20, available_host_memory() / 2);
  const CheckpointOffsets none;
  std::string text = checkpoint_header("", sizes_, dtype_, crcs_, &none).dump();
  header_room_ = text.size() + kHeaderSlack;
  text.resize(header_room_, ' ');
  out_.reset(std::fopen(file_.tmp_path().c_str(), "wb"));
  if (!out_) fail(std::strerror(errno));
  if (!write_checkpoint_preamble(out_.get(), text)) fail(std::strerror(errno));
  thread_ = std::thread([this] { write_blocks(); });
}

JournalCheckpoint::~JournalCheckpoint() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (out_) out_.reset();
  if (!ended_) {
    try {
      step_.end_journal();
    } catch (...) {  // nothing to report from a destructor: the file is left incomplete either way
    }
  }
}

void JournalCheckpoint::fail(const std::string& what) const {
  throw Error("cannot write checkpoint '" + path_ + "': " + what);
}

void JournalCheckpoint::write_blocks() {
  try {
    std::int64_t largest = 0;
    for (const auto n : sizes_) largest = std::max(largest, checkpoint_block_bytes(n, dtype_));
    std::vector<char> buffer(static_cast<std::size_t>(largest));
    for (std::size_t i = 0; i < sizes_.size() && !stop_; ++i) {
      const auto bytes = static_cast<std::size_t>(checkpoint_block_bytes(sizes_[i], dtype_));
      held_[i] = step_.copy_block(static_cast<std::int64_t>(i), buffer.data());
      if (std::fwrite(buffer.data(), 1, bytes, out_.get()) != bytes) fail(std::strerror(errno));
      crcs_[i] = crc32_hex(buffer.data(), bytes);
    }
    if (stop_) failure_ = "stopped before every covariance block was written";
  } catch (const std::exception& e) {
    failure_ = e.what();
  }
  done_ = true;
}

void JournalCheckpoint::complete(const DeepPot& model, nlohmann::json meta, const WeightAverage* average) {
  if (thread_.joinable()) thread_.join();
  // The journal ends here whatever happens below, so that training never keeps changes no one will write.
  ended_ = true;
  CovarianceJournal journal = step_.end_journal();
  if (!failure_.empty()) {
    if (failure_.rfind("cannot write checkpoint", 0) == 0) throw Error(failure_);
    fail(failure_);
  }
  journal.held = held_;
  torch::serialize::OutputArchive state;
  step_.save(state);
  if (average != nullptr) average->save(state);
  journal.write(state);
  meta["format_version"] = kCheckpointFormatVersion;
  std::string archive;
  try {
    archive = checkpoint_archive(model, meta, state);
  } catch (const c10::Error& e) {
    fail(e.what_without_backtrace());
  }
  CheckpointOffsets offsets;
  offsets.covariance = kCheckpointHeaderAt + header_room_;
  offsets.archive = offsets.covariance;
  for (const auto n : sizes_)
    offsets.archive += static_cast<std::uint64_t>(checkpoint_block_bytes(n, dtype_));
  std::string text = checkpoint_header(archive, sizes_, dtype_, crcs_, &offsets).dump();
  if (text.size() > header_room_) fail("the header outgrew the room kept for it");
  text.resize(header_room_, ' ');
  std::FILE* out = out_.get();
  const bool ok = std::fwrite(archive.data(), 1, archive.size(), out) == archive.size() &&
                  std::fseek(out, kCheckpointHeaderAt, SEEK_SET) == 0 &&
                  std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (!ok) fail(std::strerror(errno));
  const bool flushed = std::fflush(out) == 0;
  const bool closed = std::fclose(out_.release()) == 0;
  if (!flushed || !closed) fail(std::strerror(errno));
  file_.commit();
}

}  // namespace deepkf
