#include "src/train/Checkpoint.hpp"

#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "optim/PackedSweep.hpp"
#include "src/core/Checksum.hpp"
#include "src/core/Error.hpp"
#include "src/core/FileMagic.hpp"
#include "src/core/Together.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf {
namespace {

constexpr const char* kMeta = "deepkf_checkpoint";
constexpr const char* kModel = "model";
constexpr const char* kOptimizer = "optimizer";

std::uint64_t from_little_endian(const unsigned char* b) {
  std::uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= static_cast<std::uint64_t>(b[k]) << (8 * k);
  return v;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw ModelError("checkpoint '" + path + "' is corrupt or truncated: " + what);
}

}  // namespace

std::string checkpoint_archive(const DeepPot& model, const nlohmann::json& meta,
                               torch::serialize::OutputArchive& optimizer) {
  torch::serialize::OutputArchive weights;
  model->save(weights);
  torch::serialize::OutputArchive archive;
  archive.write(kMeta, c10::IValue(meta.dump()));
  archive.write(kModel, weights);
  archive.write(kOptimizer, optimizer);
  std::string bytes;
  archive.save_to([&](const void* data, std::size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  return bytes;
}

std::int64_t checkpoint_block_bytes(std::int64_t n, torch::ScalarType dtype) {
  return packed::triangle_size(n) * static_cast<std::int64_t>(c10::elementSize(dtype));
}

nlohmann::json checkpoint_header(const std::string& archive, const std::vector<std::int64_t>& block_sizes,
                                 torch::ScalarType dtype, const std::vector<std::string>& crcs,
                                 const CheckpointOffsets* offsets) {
  nlohmann::json header;
  header["format_version"] = kCheckpointFormatVersion;
  header["archive_bytes"] = archive.size();
  header["archive_crc32"] = archive.empty() ? std::string(kCheckpointNoChecksum) : crc32_hex(archive);
  header["covariance"]["dtype"] = dtype == torch::kFloat64 ? "float64" : "float32";
  header["covariance"]["layout"] = "packed_upper";
  if (offsets != nullptr) {
    header["archive_offset"] = offsets->archive;
    header["covariance"]["offset"] = offsets->covariance;
  }
  nlohmann::json blocks = nlohmann::json::array();
  std::int64_t offset = 0;  // from the start of the covariance section
  for (std::size_t i = 0; i < block_sizes.size(); ++i) {
    blocks.push_back({block_sizes[i], offset, crcs[i]});
    offset += checkpoint_block_bytes(block_sizes[i], dtype);
  }
  header["covariance"]["blocks"] = blocks;
  return header;
}

bool write_checkpoint_preamble(std::FILE* out, const std::string& header_text) {
  unsigned char length[8];
  for (int k = 0; k < 8; ++k) length[k] = static_cast<unsigned char>(header_text.size() >> (8 * k));
  return std::fwrite(kCheckpointMagic, 1, 8, out) == 8 && std::fwrite(length, 1, 8, out) == 8 &&
         std::fwrite(header_text.data(), 1, header_text.size(), out) == header_text.size();
}

namespace {

// Fills out's meta, model and optimizer from an archive already loaded.
void read_archive(torch::serialize::InputArchive& archive, const std::string& path, torch::Device device,
                  LoadedCheckpoint& out) {
  try {
    c10::IValue value;
    archive.read(kMeta, value);
    out.meta = nlohmann::json::parse(value.toStringRef());
  } catch (const std::exception& e) {
    c10::IValue model_metadata;
    if (archive.try_read("deepkf_metadata", model_metadata))
      throw ModelError(
          "'" + path +
          "' is a model file, not a training checkpoint (the checkpoint is model.ckpt next to it; "
          "deepkf train --init-model starts a run from a model file's weights)");
    refuse_foreign_model_file(path);  // DeePMD-kit's, named as such
    throw ModelError("checkpoint '" + path + "' has no readable deepkf record (not a deepkf checkpoint?)");
  }
  const int version = out.meta.value("format_version", 0);
  if (version < 1 || version > kCheckpointFormatVersion) {
    throw ModelError("checkpoint '" + path + "' has format version " + std::to_string(version) +
                     "; this build reads versions 1 to " + std::to_string(kCheckpointFormatVersion));
  }
  try {
    out.model = DeepPot(ModelConfig::from_json(out.meta.at("model")));
    // from checkpoints that record it: the training data's closest neighbours (TrainingRange)
    out.model->set_training_range(TrainingRange::from_json(out.meta.value("training_range", nlohmann::json()),
                                                           out.model->config().ntypes(),
                                                           "checkpoint '" + path + "'"));
    torch::serialize::InputArchive weights;
    archive.read(kModel, weights);
    out.model->load(weights);
    out.model->to(device);
    archive.read(kOptimizer, out.optimizer);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw ModelError("checkpoint '" + path +
                     "' does not match its own model record: " + first_line(e.what()));
  }
}

}  // namespace

CheckpointWriter::CheckpointWriter(const std::string& path, const DeepPot& model, nlohmann::json meta,
                                   torch::serialize::OutputArchive& optimizer,
                                   const std::vector<std::int64_t>& block_sizes,
                                   torch::ScalarType block_dtype)
    : path_(path), file_(path), block_sizes_(block_sizes), dtype_(block_dtype) {
  if (dtype_ != torch::kFloat64 && dtype_ != torch::kFloat32)
    fail("covariance blocks must be float64 or float32");
  meta["format_version"] = kCheckpointFormatVersion;
  std::string archive;
  try {
    archive = checkpoint_archive(model, meta, optimizer);
  } catch (const c10::Error& e) {
    fail(e.what_without_backtrace());
  }
  header_ = checkpoint_header(archive, block_sizes_, dtype_,
                              std::vector<std::string>(block_sizes_.size(), kCheckpointNoChecksum));
  out_.reset(std::fopen(file_.tmp_path().c_str(), "wb"));
  if (!out_) fail(std::strerror(errno));
  const bool ok = write_checkpoint_preamble(out_.get(), header_.dump()) &&
                  std::fwrite(archive.data(), 1, archive.size(), out_.get()) == archive.size();
  if (!ok) fail(std::strerror(errno));
}

void CheckpointWriter::fail(const std::string& what) const {
  throw Error("cannot write checkpoint '" + path_ + "': " + what);
}

void CheckpointWriter::write_block(std::int64_t i, const torch::Tensor& block) {
  if (i != next_block_ || i >= static_cast<std::int64_t>(block_sizes_.size()))
    fail("covariance block " + std::to_string(i) + " given, block " + std::to_string(next_block_) +
         " expected");
  const auto n = block_sizes_[static_cast<std::size_t>(i)];
  if (!block.is_cpu() || block.scalar_type() != dtype_ ||
      block.sizes().vec() != std::vector<std::int64_t>{n * (n + 1) / 2})
    fail("covariance block " + std::to_string(i) + " is not the packed triangle of a " + std::to_string(n) +
         " x " + std::to_string(n) + " block (a CPU tensor of the checkpoint's dtype)");
  const auto data = block.contiguous();
  const auto bytes = static_cast<std::size_t>(data.numel()) * data.element_size();
  if (std::fwrite(data.data_ptr(), 1, bytes, out_.get()) != bytes) fail(std::strerror(errno));
  header_["covariance"]["blocks"][static_cast<std::size_t>(i)][2] = crc32_hex(data.data_ptr(), bytes);
  ++next_block_;
}

void CheckpointWriter::commit() {
  if (next_block_ != static_cast<std::int64_t>(block_sizes_.size()))
    fail(std::to_string(next_block_) + " of " + std::to_string(block_sizes_.size()) +
         " covariance blocks written");
  // The header again, now with the blocks' checksums: 8 hex digits each, as the placeholders were.
  const std::string text = header_.dump();
  const bool rewritten = std::fseek(out_.get(), kCheckpointHeaderAt, SEEK_SET) == 0 &&
                         std::fwrite(text.data(), 1, text.size(), out_.get()) == text.size();
  if (!rewritten) fail(std::strerror(errno));
  const bool ok = std::fflush(out_.get()) == 0;
  const bool closed = std::fclose(out_.release()) == 0;
  if (!ok || !closed) fail(std::strerror(errno));
  file_.commit();
}

namespace {

// One covariance block's place in a streamed checkpoint: n (the block's size), its offset in the covariance
// section and its checksum (empty before format 4).
struct BlockEntry {
  std::int64_t n, offset;
  std::string crc;
};

// The header of a streamed checkpoint (formats 2 to 4), checked against the file's size.
struct StreamHeader {
  std::uint64_t length = 0;        // the header's bytes
  std::uint64_t archive_size = 0;  // the LibTorch archive's bytes, after the header
  // Format 5 may place the archive after the covariance ("archive_offset", "covariance_offset": bytes from
  // the file's start); 0: the order of format 4.
  std::uint64_t archive_at = 0, covariance_at = 0;
  std::string archive_crc;  // empty before format 4
  torch::ScalarType dtype = torch::kFloat64;
  bool packed = false;  // format 3 on: "packed_upper" triangles; format 2: dense blocks
  std::vector<BlockEntry> blocks;

  std::uint64_t archive() const { return archive_at ? archive_at : kCheckpointHeaderAt + length; }
  std::uint64_t base() const {
    return covariance_at ? covariance_at : kCheckpointHeaderAt + length + archive_size;
  }  // covariance
  // Values of a block of size n in the file.
  std::int64_t count(std::int64_t n) const { return packed ? n * (n + 1) / 2 : n * n; }
};

// Reads and checks the header that follows the magic; `f` is left at the archive.
StreamHeader read_stream_header(const std::string& path, std::FILE* f, std::uint64_t file_size) {
  StreamHeader h;
  unsigned char length_bytes[8];
  if (std::fread(length_bytes, 1, 8, f) != 8) corrupt(path, "no header length");
  h.length = from_little_endian(length_bytes);
  if (file_size < kCheckpointHeaderAt || h.length > file_size - kCheckpointHeaderAt)
    corrupt(path, "header length " + std::to_string(h.length) + " beyond the file's end");
  std::string text(h.length, '\0');
  if (std::fread(text.data(), 1, h.length, f) != h.length) corrupt(path, "short header");
  std::string layout;
  try {
    const nlohmann::json header = nlohmann::json::parse(text);
    h.archive_size = header.at("archive_bytes").get<std::uint64_t>();
    h.dtype = header.at("covariance").at("dtype").get<std::string>() == "float32" ? torch::kFloat32
                                                                                  : torch::kFloat64;
    layout = header.at("covariance").value("layout", std::string("dense"));
    h.archive_crc = header.value("archive_crc32", std::string());
    h.archive_at = header.value("archive_offset", std::uint64_t{0});
    h.covariance_at = header.at("covariance").value("offset", std::uint64_t{0});
    for (const auto& b : header.at("covariance").at("blocks"))
      h.blocks.push_back({b.at(0).get<std::int64_t>(), b.at(1).get<std::int64_t>(),
                          b.size() > 2 ? b.at(2).get<std::string>() : std::string()});
  } catch (const std::exception& e) {
    corrupt(path, std::string("bad header: ") + e.what());
  }
  if (layout != "dense" && layout != "packed_upper")
    corrupt(path, "unknown covariance layout '" + layout + "' in the header");
  h.packed = layout == "packed_upper";
  if (h.archive() > file_size || h.archive_size > file_size - h.archive() || h.base() > file_size)
    corrupt(path, "archive of " + std::to_string(h.archive_size) + " bytes beyond the file's end");
  const auto elem = static_cast<std::uint64_t>(c10::elementSize(h.dtype));
  std::uint64_t end = h.base();
  for (const auto& [n, offset, crc] : h.blocks) {
    if (n < 0 || offset < 0) corrupt(path, "negative block size or offset in the header");
    // Compared in double first: a damaged n must not overflow the products below.
    const double values = h.packed ? 0.5 * static_cast<double>(n) * static_cast<double>(n + 1)
                                   : static_cast<double>(n) * static_cast<double>(n);
    if (values * static_cast<double>(elem) + static_cast<double>(offset) > static_cast<double>(file_size))
      corrupt(path, "covariance block of size " + std::to_string(n) + " at offset " + std::to_string(offset) +
                        " beyond the file's end");
    end = std::max(
        end, h.base() + static_cast<std::uint64_t>(offset) + static_cast<std::uint64_t>(h.count(n)) * elem);
  }
  if (end > file_size)
    corrupt(path, "the file has " + std::to_string(file_size) + " bytes, its header describes " +
                      std::to_string(end));
  return h;
}

// Reads block i from the file when asked (LoadedCheckpoint::covariance_block), checking its checksum.
std::function<torch::Tensor(std::int64_t)> block_reader(const std::string& path, const StreamHeader& h) {
  return [path, h](std::int64_t i) {
    if (i < 0 || i >= static_cast<std::int64_t>(h.blocks.size()))
      throw ModelError("checkpoint '" + path + "' has " + std::to_string(h.blocks.size()) +
                       " covariance blocks, block " + std::to_string(i) + " was asked for");
    const auto& [n, offset, crc] = h.blocks[static_cast<std::size_t>(i)];
    const auto options = torch::TensorOptions().dtype(h.dtype);
    auto block = h.packed ? torch::empty({h.count(n)}, options) : torch::empty({n, n}, options);
    FilePtr in(std::fopen(path.c_str(), "rb"));
    const auto nbytes = static_cast<std::size_t>(h.count(n)) * c10::elementSize(h.dtype);
    if (!in ||
        std::fseek(in.get(), static_cast<long>(h.base() + static_cast<std::uint64_t>(offset)), SEEK_SET) !=
            0 ||
        std::fread(block.data_ptr(), 1, nbytes, in.get()) != nbytes)
      corrupt(path, "cannot read covariance block " + std::to_string(i));
    if (!crc.empty() && crc32_hex(block.data_ptr(), nbytes) != crc)
      corrupt(path, "covariance block " + std::to_string(i) + " does not match its checksum");
    return block;
  };
}

}  // namespace

LoadedCheckpoint read_checkpoint(const std::string& path, torch::Device device) {
  if (!std::filesystem::is_regular_file(path)) throw ModelError("checkpoint '" + path + "' does not exist");
  LoadedCheckpoint out;
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw ModelError("cannot open checkpoint '" + path + "': " + std::strerror(errno));
  char magic[8] = {};
  const bool streamed = std::fread(magic, 1, 8, f.get()) == 8 && std::memcmp(magic, kCheckpointMagic, 8) == 0;
  torch::serialize::InputArchive archive;
  if (!streamed) {
    // Format 1: the whole file is a LibTorch archive.
    try {
      archive.load_from(path, device);
    } catch (const std::exception& e) {
      refuse_foreign_model_file(path);  // DeePMD-kit's, named as such
      corrupt(path, first_line(e.what()));
    }
    read_archive(archive, path, device, out);
    return out;
  }
  const StreamHeader h =
      read_stream_header(path, f.get(), static_cast<std::uint64_t>(std::filesystem::file_size(path)));
  std::string bytes(h.archive_size, '\0');
  if (std::fseek(f.get(), static_cast<long>(h.archive()), SEEK_SET) != 0 ||
      std::fread(bytes.data(), 1, h.archive_size, f.get()) != h.archive_size)
    corrupt(path, "short archive");
  if (!h.archive_crc.empty() && crc32_hex(bytes) != h.archive_crc)
    corrupt(path, "the model, optimizer state and run record do not match their checksum");
  try {
    archive.load_from(bytes.data(), bytes.size(), device);
  } catch (const std::exception& e) {
    corrupt(path, first_line(e.what()));
  }
  read_archive(archive, path, device, out);
  out.covariance_blocks = static_cast<std::int64_t>(h.blocks.size());
  if (!h.blocks.empty()) out.covariance_block = block_reader(path, h);
  return out;
}

void PendingCheckpoint::complete() {
  for (std::size_t i = 0; i < offsets.size(); ++i)
    writer->write_block(static_cast<std::int64_t>(i), values.narrow(0, offsets[i], counts[i]));
  writer->commit();
}

std::unique_ptr<PendingCheckpoint> write_training_checkpoint(const std::string& path, const DeepPot& model,
                                                             const nlohmann::json& meta, TrainingStep& step,
                                                             Communicator& comm, const WeightAverage* average,
                                                             const torch::Tensor& copy_into) {
  const bool root = comm.rank() == 0;
  torch::serialize::OutputArchive state;
  step.save(state);
  if (average != nullptr) average->save(state);
  std::unique_ptr<CheckpointWriter> writer;
  together(comm, [&] {
    if (root)
      writer = std::make_unique<CheckpointWriter>(path, model, meta, state, step.block_sizes(),
                                                  step.block_dtype());
  });
  auto pending = root && copy_into.defined() ? std::make_unique<PendingCheckpoint>() : nullptr;
  std::string failure;
  std::int64_t offset = 0;
  step.stream_blocks([&](std::int64_t i, const torch::Tensor& block) {
    if (!failure.empty()) return;
    try {
      if (pending) {
        if (offset + block.numel() > copy_into.numel())
          throw Error("cannot write checkpoint '" + path + "': the covariance does not fit the copy's " +
                      std::to_string(copy_into.numel()) + " values");
        copy_into.narrow(0, offset, block.numel()).copy_(block.reshape({-1}));
        pending->offsets.push_back(offset);
        pending->counts.push_back(block.numel());
        offset += block.numel();
      } else {
        writer->write_block(i, block);
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  together(comm, [&] {
    if (!root) return;
    if (!failure.empty()) throw Error(failure);
    if (!pending) writer->commit();
  });
  if (!pending) return nullptr;
  pending->writer = std::move(writer);
  pending->values = copy_into;
  return pending;
}

}  // namespace deepkf
