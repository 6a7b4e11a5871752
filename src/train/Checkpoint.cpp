#include "src/train/Checkpoint.hpp"

#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"
#include "src/core/Together.hpp"

namespace deepkf {
namespace {

constexpr const char* kMeta = "deepkf_checkpoint";
constexpr const char* kModel = "model";
constexpr const char* kOptimizer = "optimizer";
constexpr char kMagic[8] = {'D', 'E', 'E', 'P', 'K', 'F', 'C', 'K'};

std::uint64_t to_little_endian(std::uint64_t v) {
  std::uint64_t out = 0;
  auto* b = reinterpret_cast<unsigned char*>(&out);
  for (int k = 0; k < 8; ++k) b[k] = static_cast<unsigned char>(v >> (8 * k));
  return out;
}

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

// The run record, model and optimizer state as one LibTorch archive, in memory.
std::string archive_bytes(const DeepPot& model, const nlohmann::json& meta,
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

// Fills out's meta, model and optimizer from an archive already loaded.
void read_archive(torch::serialize::InputArchive& archive, const std::string& path, torch::Device device,
                  LoadedCheckpoint& out) {
  try {
    c10::IValue value;
    archive.read(kMeta, value);
    out.meta = nlohmann::json::parse(value.toStringRef());
  } catch (const std::exception& e) {
    throw ModelError("checkpoint '" + path + "' has no readable deepkf record (not a deepkf checkpoint?)");
  }
  const int version = out.meta.value("format_version", 0);
  if (version < 1 || version > kCheckpointFormatVersion) {
    throw ModelError("checkpoint '" + path + "' has format version " + std::to_string(version) +
                     "; this build reads versions 1 to " + std::to_string(kCheckpointFormatVersion));
  }
  try {
    out.model = DeepPot(ModelConfig::from_json(out.meta.at("model")));
    torch::serialize::InputArchive weights;
    archive.read(kModel, weights);
    out.model->load(weights);
    out.model->to(device);
    archive.read(kOptimizer, out.optimizer);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw ModelError("checkpoint '" + path +
                     "' does not match its own model record: " + std::string(e.what()).substr(0, 200));
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
    archive = archive_bytes(model, meta, optimizer);
  } catch (const c10::Error& e) {
    fail(e.what_without_backtrace());
  }
  nlohmann::json header;
  header["format_version"] = kCheckpointFormatVersion;
  header["archive_bytes"] = archive.size();
  header["covariance"]["dtype"] = dtype_ == torch::kFloat64 ? "float64" : "float32";
  header["covariance"]["layout"] = "packed_upper";
  nlohmann::json blocks = nlohmann::json::array();
  std::int64_t offset = 0;  // from the start of the covariance section
  for (auto n : block_sizes_) {
    blocks.push_back({n, offset});
    offset += packed::triangle_size(n) * static_cast<std::int64_t>(c10::elementSize(dtype_));
  }
  header["covariance"]["blocks"] = blocks;
  const std::string text = header.dump();
  out_.reset(std::fopen(file_.tmp_path().c_str(), "wb"));
  if (!out_) fail(std::strerror(errno));
  std::FILE* out = out_.get();
  const std::uint64_t length = to_little_endian(text.size());
  const bool ok = std::fwrite(kMagic, 1, 8, out) == 8 && std::fwrite(&length, 1, 8, out) == 8 &&
                  std::fwrite(text.data(), 1, text.size(), out) == text.size() &&
                  std::fwrite(archive.data(), 1, archive.size(), out) == archive.size();
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
  ++next_block_;
}

void CheckpointWriter::commit() {
  if (next_block_ != static_cast<std::int64_t>(block_sizes_.size()))
    fail(std::to_string(next_block_) + " of " + std::to_string(block_sizes_.size()) +
         " covariance blocks written");
  const bool ok = std::fflush(out_.get()) == 0;
  const bool closed = std::fclose(out_.release()) == 0;
  if (!ok || !closed) fail(std::strerror(errno));
  file_.commit();
}

LoadedCheckpoint read_checkpoint(const std::string& path, torch::Device device) {
  if (!std::filesystem::is_regular_file(path)) throw ModelError("checkpoint '" + path + "' does not exist");
  LoadedCheckpoint out;
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw ModelError("cannot open checkpoint '" + path + "': " + std::strerror(errno));
  char magic[8] = {};
  const bool streamed = std::fread(magic, 1, 8, f.get()) == 8 && std::memcmp(magic, kMagic, 8) == 0;
  torch::serialize::InputArchive archive;
  if (!streamed) {
    // Format 1: the whole file is a LibTorch archive.
    try {
      archive.load_from(path, device);
    } catch (const std::exception& e) {
      corrupt(path, std::string(e.what()).substr(0, 200));
    }
    read_archive(archive, path, device, out);
    return out;
  }
  const auto file_size = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  unsigned char length_bytes[8];
  if (std::fread(length_bytes, 1, 8, f.get()) != 8) corrupt(path, "no header length");
  const std::uint64_t length = from_little_endian(length_bytes);
  if (length > file_size) corrupt(path, "header length " + std::to_string(length) + " beyond the file's end");
  std::string text(length, '\0');
  if (std::fread(text.data(), 1, length, f.get()) != length) corrupt(path, "short header");
  nlohmann::json header;
  std::uint64_t archive_size = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // (n, offset)
  torch::ScalarType dtype = torch::kFloat64;
  std::string layout;  // format 3: "packed_upper" triangles; format 2: dense blocks
  try {
    header = nlohmann::json::parse(text);
    archive_size = header.at("archive_bytes").get<std::uint64_t>();
    dtype = header.at("covariance").at("dtype").get<std::string>() == "float32" ? torch::kFloat32
                                                                                : torch::kFloat64;
    layout = header.at("covariance").value("layout", std::string("dense"));
    for (const auto& b : header.at("covariance").at("blocks"))
      blocks.emplace_back(b.at(0).get<std::int64_t>(), b.at(1).get<std::int64_t>());
  } catch (const std::exception& e) {
    corrupt(path, std::string("bad header: ") + e.what());
  }
  if (layout != "dense" && layout != "packed_upper")
    corrupt(path, "unknown covariance layout '" + layout + "' in the header");
  const bool packed = layout == "packed_upper";
  const auto elem = static_cast<std::uint64_t>(c10::elementSize(dtype));
  const std::uint64_t base = 16 + length + archive_size;  // the covariance section
  std::uint64_t end = base;
  // Values of block i in the file.
  auto count = [packed](std::int64_t n) { return packed ? n * (n + 1) / 2 : n * n; };
  for (const auto& [n, offset] : blocks) {
    if (n < 0 || offset < 0) corrupt(path, "negative block size or offset in the header");
    end = std::max(end,
                   base + static_cast<std::uint64_t>(offset) + static_cast<std::uint64_t>(count(n)) * elem);
  }
  if (end > file_size)
    corrupt(path, "the file has " + std::to_string(file_size) + " bytes, its header describes " +
                      std::to_string(end));
  std::string bytes(archive_size, '\0');
  if (std::fread(bytes.data(), 1, archive_size, f.get()) != archive_size) corrupt(path, "short archive");
  try {
    archive.load_from(bytes.data(), bytes.size(), device);
  } catch (const std::exception& e) {
    corrupt(path, std::string(e.what()).substr(0, 200));
  }
  read_archive(archive, path, device, out);
  if (!blocks.empty()) {
    out.covariance_block = [path, blocks, dtype, elem, base, packed, count](std::int64_t i) {
      if (i < 0 || i >= static_cast<std::int64_t>(blocks.size()))
        throw ModelError("checkpoint '" + path + "' has " + std::to_string(blocks.size()) +
                         " covariance blocks, block " + std::to_string(i) + " was asked for");
      const auto [n, offset] = blocks[static_cast<std::size_t>(i)];
      auto block = packed ? torch::empty({count(n)}, torch::TensorOptions().dtype(dtype))
                          : torch::empty({n, n}, torch::TensorOptions().dtype(dtype));
      FilePtr in(std::fopen(path.c_str(), "rb"));
      const auto nbytes = static_cast<std::size_t>(count(n)) * elem;
      if (!in ||
          std::fseek(in.get(), static_cast<long>(base + static_cast<std::uint64_t>(offset)), SEEK_SET) != 0 ||
          std::fread(block.data_ptr(), 1, nbytes, in.get()) != nbytes)
        corrupt(path, "cannot read covariance block " + std::to_string(i));
      return block;
    };
  }
  return out;
}

void write_training_checkpoint(const std::string& path, const DeepPot& model, const nlohmann::json& meta,
                               TrainingStep& step, Communicator& comm) {
  const bool root = comm.rank() == 0;
  torch::serialize::OutputArchive state;
  step.save(state);
  std::unique_ptr<CheckpointWriter> writer;
  together(comm, [&] {
    if (root)
      writer = std::make_unique<CheckpointWriter>(path, model, meta, state, step.block_sizes(),
                                                  step.block_dtype());
  });
  std::string failure;
  step.stream_blocks([&](std::int64_t i, const torch::Tensor& block) {
    if (!failure.empty()) return;
    try {
      writer->write_block(i, block);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  together(comm, [&] {
    if (!root) return;
    if (!failure.empty()) throw Error(failure);
    writer->commit();
  });
}

}  // namespace deepkf
