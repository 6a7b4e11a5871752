#pragma once
// Training checkpoints: one file with the model (config, weights, statistics), the optimizer's state, a
// JSON record of the run (step, data position, the resolved input, provenance) and the RLEKF covariance
// blocks. Written atomically (a run killed while writing keeps its previous checkpoint) and streamed: the
// covariance goes to the file one block at a time, so the writer never holds a second copy of P.
//
// Layout (format 4):
//   "DEEPKFCK"          8 bytes (kCheckpointMagic, src/core/FileMagic.hpp)
//   header length H     uint64, little-endian
//   header              H bytes of JSON: {"format_version": 4, "archive_bytes": A, "archive_crc32": "8 hex",
//                       "covariance": {"dtype": "float64" | "float32", "layout": "packed_upper",
//                                      "blocks": [[n_i, offset_i, "crc32 of block i"], ...]}}
//   archive             A bytes: a LibTorch archive holding the run record, the model and the optimizer state
//   covariance          block i: the upper triangle of P_i packed row by row (row r holds columns r ..
//   n_i-1),
//                       n_i (n_i + 1) / 2 values, little-endian, offset_i bytes into this section
// The CRC-32 values (src/core/Checksum.hpp) are checked when the archive and each block are read: a rank
// checks the blocks it reads. Format 5 adds, for a checkpoint written from the live covariance while training
// went on (src/train/JournalCheckpoint.hpp), "archive_offset" and covariance "offset" (bytes from the file's
// start: the covariance first, the archive after it) and a covariance journal in the optimizer state
// (optim/CovarianceJournal.hpp); without them it is format 4. Still read: format 3 (the same without
// checksums), format 2 (dense blocks, n_i x n_i values row-major, no "layout") and format 1 (a plain LibTorch
// archive with the blocks inside the optimizer state).
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optim/TrainingStep.hpp"
#include "src/core/AtomicFile.hpp"
#include "src/core/Communicator.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/WeightAverage.hpp"

namespace deepkf {

constexpr int kCheckpointFormatVersion = 5;
constexpr const char* kCheckpointNoChecksum = "00000000";  // a block's checksum until it is written
constexpr std::uint64_t kCheckpointHeaderAt = 16;  // the header's text follows the magic and its length

// The run record, the model and the optimizer state as one LibTorch archive, in memory: a checkpoint's
// archive section. meta must hold "format_version".
std::string checkpoint_archive(const DeepPot& model, const nlohmann::json& meta,
                               torch::serialize::OutputArchive& optimizer);

// Bytes of a covariance block of n in the file: its packed triangle, n (n + 1) / 2 values of dtype.
std::int64_t checkpoint_block_bytes(std::int64_t n, torch::ScalarType dtype);

// Where format 5 places the covariance and the archive: bytes from the file's start.
struct CheckpointOffsets {
  std::uint64_t covariance = 0, archive = 0;
};

// The JSON header of a streamed checkpoint (the layout above) for `archive` and covariance blocks of
// `block_sizes` and `dtype`, crcs[i] the checksum of block i (kCheckpointNoChecksum until it is known); with
// `offsets`, format 5's "archive_offset" and covariance "offset".
nlohmann::json checkpoint_header(const std::string& archive, const std::vector<std::int64_t>& block_sizes,
                                 torch::ScalarType dtype, const std::vector<std::string>& crcs,
                                 const CheckpointOffsets* offsets = nullptr);

// Writes the magic, the header's length (uint64, little-endian) and `header_text`; false where a write fails.
bool write_checkpoint_preamble(std::FILE* out, const std::string& header_text);

struct LoadedCheckpoint {
  nlohmann::json
      meta;  // {"format_version", "step", "epoch", "position", "config", "model", "optimizer", ...}
  DeepPot model{nullptr};
  torch::serialize::InputArchive optimizer;  // the optimizer's state
  // Covariance block i read from the file when asked, a CPU tensor: packed [n_i (n_i + 1) / 2] (format 3)
  // or dense [n_i, n_i] (format 2); null when the file has none beside the archive (format 1, or an
  // optimizer without covariance). Throws ModelError naming the file.
  std::function<torch::Tensor(std::int64_t)> covariance_block;
  std::int64_t covariance_blocks = 0;  // blocks covariance_block can give
};

// Writes a checkpoint in stages: the constructor writes the record, model and optimizer state to a
// temporary file, write_block() appends each covariance block in order, commit() renames it over `path`.
// Destroyed without commit(), it leaves `path` as it was.
class CheckpointWriter {
 public:
  // meta must hold "model" (ModelConfig::to_json()); format_version is added. `optimizer` holds the
  // optimizer's state without the covariance; block_sizes are the n_i of the blocks to follow.
  CheckpointWriter(const std::string& path, const DeepPot& model, nlohmann::json meta,
                   torch::serialize::OutputArchive& optimizer,
                   const std::vector<std::int64_t>& block_sizes = {},
                   torch::ScalarType block_dtype = torch::kFloat64);
  ~CheckpointWriter() = default;
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Block i, the next in order: its packed upper triangle, a CPU tensor [n_i (n_i + 1) / 2] of block_dtype.
  void write_block(std::int64_t i, const torch::Tensor& block);
  // Throws Error when blocks are missing or the file cannot be completed.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  AtomicFile file_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out_{nullptr, &std::fclose};
  std::vector<std::int64_t> block_sizes_;
  torch::ScalarType dtype_;
  nlohmann::json header_;  // rewritten in place by commit() with the blocks' checksums (same length)
  std::int64_t next_block_ = 0;
};

// Throws ModelError naming the file (and the part) for a missing, corrupt, truncated or newer-version
// checkpoint, or for a model file given instead of one.
LoadedCheckpoint read_checkpoint(const std::string& path, torch::Device device);

// A checkpoint whose covariance rank 0 has copied into memory instead of writing it: the record, model and
// optimizer state are in the temporary file; complete() appends the blocks from `values` and renames the
// file into place. It touches nothing of the run's, so another thread may call it while training goes on.
struct PendingCheckpoint {
  std::unique_ptr<CheckpointWriter> writer;
  torch::Tensor values;               // the blocks' packed triangles one after another (a CPU tensor)
  std::vector<std::int64_t> offsets;  // block i starts at values[offsets[i]]
  std::vector<std::int64_t> counts;   // and holds counts[i] values
  void complete();                    // throws Error when the file cannot be completed
};

// Collective: writes a training checkpoint at `path` (atomically) from rank 0: the model, `meta`, the step's
// small state, and its covariance blocks streamed to rank 0 from their owners, one block at a time. A
// failure to write ends the run on every rank, after the stream, so that no rank is left waiting in it.
// `average`: the average of the weights (enable_ema), kept beside the step's state.
// With `copy_into` defined (rank 0 only: a CPU tensor of step.block_dtype() with room for every block's
// packed triangle), rank 0 copies the blocks there instead of writing them and returns the checkpoint for
// its caller to complete(); otherwise the file is complete on return and the result is null.
std::unique_ptr<PendingCheckpoint> write_training_checkpoint(const std::string& path, const DeepPot& model,
                                                             const nlohmann::json& meta, TrainingStep& step,
                                                             Communicator& comm,
                                                             const WeightAverage* average = nullptr,
                                                             const torch::Tensor& copy_into = {});

}  // namespace deepkf
