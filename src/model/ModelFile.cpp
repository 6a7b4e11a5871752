#include "src/model/ModelFile.hpp"

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Checksum.hpp"
#include "src/core/Error.hpp"
#include "src/core/FileMagic.hpp"

namespace deepkf {

namespace {

constexpr const char* kMetadataKey = "deepkf_metadata";
constexpr const char* kModelKey = "deepkf_model";
constexpr const char* kChecksumKey = "deepkf_checksum";
constexpr const char* kCheckpointKey = "deepkf_checkpoint";  // the run record of a (format 1) checkpoint
constexpr const char* kUncertaintyKey = "uncertainty_calibration";  // a metadata entry

[[noreturn]] void checkpoint_given(const std::string& path) {
  throw ModelError("'" + path +
                   "' is a training checkpoint, not a model file; export it first: deepkf export " + path +
                   " -o model.pt");
}

// Checkpoints of format 2 and later start with these bytes (src/train/Checkpoint.hpp).
bool starts_like_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kCheckpointMagic] = {};
  return in.read(magic, sizeof magic) && std::equal(magic, magic + sizeof magic, kCheckpointMagic);
}

// The CRC-32 of each part of a model file: the metadata text, and every parameter and buffer by name (its
// raw bytes in the stored dtype), in the form stored under kChecksumKey.
nlohmann::json content_checksums(const std::string& metadata, const DeepPot& model) {
  nlohmann::json tensors = nlohmann::json::object();
  const auto add = [&](const std::string& name, const torch::Tensor& t) {
    const auto bytes = t.detach().to(torch::kCPU).contiguous();
    tensors[name] = crc32_hex(bytes.data_ptr(), static_cast<std::size_t>(bytes.nbytes()));
  };
  for (const auto& p : model->named_parameters()) add(p.key(), p.value());
  for (const auto& b : model->named_buffers()) add(b.key(), b.value());
  return {{"algorithm", "crc32"}, {"metadata", crc32_hex(metadata)}, {"tensors", tensors}};
}

// Compares the stored checksums with the content read; ModelError naming the first part that differs.
void verify_checksums(torch::serialize::InputArchive& archive, const std::string& path,
                      const std::string& metadata, const DeepPot& model) {
  nlohmann::json stored;
  try {
    c10::IValue value;
    archive.read(kChecksumKey, value);
    stored = nlohmann::json::parse(value.toStringRef());
  } catch (const std::exception&) {
    throw ModelError("model file '" + path + "' is corrupt: its checksums are missing or unreadable");
  }
  const auto actual = content_checksums(metadata, model);
  const auto mismatch = [&](const std::string& part) {
    throw ModelError("model file '" + path + "' is corrupt: " + part +
                     " does not match the checksum written with it; copy the file again or export it "
                     "again from its checkpoint");
  };
  if (stored.value("metadata", std::string()) != actual["metadata"]) mismatch("the metadata");
  const auto& tensors = stored.value("tensors", nlohmann::json::object());
  for (const auto& [name, crc] : actual["tensors"].items()) {
    if (!tensors.contains(name) || tensors[name] != crc) mismatch("tensor '" + name + "'");
  }
}

// The first `n` bytes of the file (fewer when it is shorter).
std::string file_head(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string head(n, '\0');
  in.read(head.data(), static_cast<std::streamsize>(n));
  head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return head;
}

// A protobuf varint at `at` of `bytes`, `at` moved past it; false when it runs past the end.
bool read_varint(const std::string& bytes, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
    const auto c = static_cast<unsigned char>(bytes[at++]);
    value |= static_cast<std::uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return true;
  }
  return false;
}

// Whether `head` starts as a serialized TensorFlow GraphDef does (DeePMD-kit's frozen .pb): field 1, a node
// (NodeDef) of at most the file's size, whose own first field is its name, a TensorFlow node name.
bool starts_like_graph_def(const std::string& head, std::uintmax_t file_size) {
  std::size_t at = 0;
  std::uint64_t node_bytes = 0, name_bytes = 0;
  if (head.empty() || head[at++] != 0x0a) return false;
  if (!read_varint(head, at, node_bytes) || node_bytes == 0 || node_bytes > file_size) return false;
  if (at >= head.size() || head[at++] != 0x0a) return false;
  if (!read_varint(head, at, name_bytes) || name_bytes == 0 || name_bytes > node_bytes) return false;
  if (name_bytes > head.size() - at) return false;
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-' ||
           c == '>';
  };
  return std::all_of(head.begin() + static_cast<std::ptrdiff_t>(at),
                     head.begin() + static_cast<std::ptrdiff_t>(at + name_bytes), name_char);
}

// What a PyTorch archive (a zip) that is not deepkf's holds, or "" when it is deepkf's own or cannot be read
// as an archive (truncated, say). deepkf's model files and format-1 checkpoints name their entries
// deepkf_metadata, deepkf_model or deepkf_checkpoint in the archive's data.pkl.
std::string foreign_pytorch_archive(const std::string& path, bool& deepmd_kit) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    const auto records = reader.getAllRecords();
    std::string data;
    if (reader.hasRecord("data.pkl")) {
      const auto [bytes, size] = reader.getRecord("data.pkl");
      data.assign(static_cast<const char*>(bytes.get()), size);
    }
    for (const char* key : {kMetadataKey, kModelKey, kCheckpointKey})
      if (data.find(key) != std::string::npos) return "";
    const bool script = std::any_of(records.begin(), records.end(),
                                    [](const std::string& r) { return r.rfind("code/", 0) == 0; });
    // DeePMD-kit's TorchScript models keep their code under __torch__/deepmd/; its checkpoints hold the
    // model's parameters (model_params) and atomic_model weights.
    deepmd_kit = std::any_of(records.begin(), records.end(),
                             [](const std::string& r) { return r.find("deepmd") != std::string::npos; });
    for (const char* word : {"deepmd", "model_params", "atomic_model"})
      deepmd_kit = deepmd_kit || data.find(word) != std::string::npos;
    return script ? "TorchScript model" : "torch.save file";
  } catch (const std::exception&) {
    return "";
  }
}

torch::serialize::InputArchive open_archive(const std::string& path, torch::Device device) {
  if (!std::filesystem::is_regular_file(path)) throw ModelError("model file '" + path + "' does not exist");
  if (starts_like_checkpoint(path)) checkpoint_given(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const std::exception&) {
    refuse_foreign_model_file(path);
    // LibTorch's own words name its internals (a record of the zip archive, a type of the code section it
    // compiles), not what the user can do.
    throw ModelError("model file '" + path +
                     "' is corrupt or truncated: LibTorch cannot read it as a model archive; write it again "
                     "(deepkf export or freeze) or restore it from a copy");
  }
  return archive;
}

// The metadata text as stored.
std::string read_metadata_text(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue value;
  try {
    archive.read(kMetadataKey, value);
  } catch (const std::exception&) {
    if (archive.try_read(kCheckpointKey, value)) checkpoint_given(path);
    refuse_foreign_model_file(path);
    throw ModelError("model file '" + path + "' has no deepkf metadata (not a deepkf model file?)");
  }
  if (!value.isString()) throw ModelError("model file '" + path + "' has metadata that is not a string");
  return value.toStringRef();
}

nlohmann::json parse_metadata(const std::string& text, const std::string& path) {
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ModelError("model file '" + path + "' has corrupt metadata: " + e.what());
  }
  if (!meta.is_object() || !meta.contains("format_version") || !meta["format_version"].is_number_integer()) {
    throw ModelError("model file '" + path + "' has metadata without an integer format_version");
  }
  const int version = meta["format_version"].get<int>();
  if (version > kModelFormatVersion || version < 1) {
    throw ModelError("model file '" + path + "' has format version " + std::to_string(version) +
                     "; this build reads versions 1 to " + std::to_string(kModelFormatVersion));
  }
  return meta;
}

// The training range (TrainingRange) as the metadata's "training_range", when the model has one.
void write_training_range(nlohmann::json& meta, const DeepPot& model) {
  if (!model->training_range().empty()) meta["training_range"] = model->training_range().to_json();
}

void read_training_range(const nlohmann::json& meta, DeepPot& model, const std::string& path) {
  const auto it = meta.find("training_range");
  if (it == meta.end()) return;  // written before deepkf recorded it
  model->set_training_range(
      TrainingRange::from_json(*it, model->config().ntypes(), "model file '" + path + "'"));
}

// A compressed model's table layout and settings as the metadata's "compression" (the coefficients are
// buffers of the model); on loading, the tables are registered before the weights are read into them.
void write_compression(nlohmann::json& meta, const DeepPot& model) {
  if (model->compressed()) meta["compression"] = model->table().to_json();
}

void prepare_compression(const nlohmann::json& meta, DeepPot& model, const std::string& path) {
  const auto it = meta.find("compression");
  if (it == meta.end()) return;
  try {
    model->prepare_tables(*it, "model file '" + path + "'");
  } catch (const nlohmann::json::exception& e) {
    throw ModelError("model file '" + path + "' has a malformed compression entry: " + e.what());
  }
}

}  // namespace

void save_model(const std::string& path, const DeepPot& model, const nlohmann::json& provenance) {
  save_model(path, model, provenance, nullptr);
}

void save_model(const std::string& path, const DeepPot& model, const nlohmann::json& provenance,
                const nlohmann::json& uncertainty_calibration) {
  const auto& config = model->config();
  nlohmann::json meta = {{"format_version", kModelFormatVersion},
                         {"model", config.to_json()},
                         {"type_map", config.type_map},
                         {"rcut", config.rcut},
                         {"rcut_smth", config.rcut_smth},
                         {"sel", config.sel},
                         {"precision", config.precision_name()},
                         {"parameter_count", model->parameter_count()},
                         {"provenance", provenance}};
  if (!uncertainty_calibration.is_null()) meta[kUncertaintyKey] = uncertainty_calibration;
  write_training_range(meta, model);
  write_compression(meta, model);
  try {
    torch::serialize::OutputArchive weights;
    model->save(weights);
    torch::serialize::OutputArchive archive;
    const std::string text = meta.dump();
    archive.write(kMetadataKey, c10::IValue(text));
    archive.write(kModelKey, weights);
    archive.write(kChecksumKey, c10::IValue(content_checksums(text, model).dump()));
    write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
  } catch (const c10::Error& e) {
    throw ModelError("cannot write model file '" + path + "': " + e.what_without_backtrace());
  } catch (const ModelError&) {
    throw;
  } catch (const Error& e) {
    throw ModelError("cannot write model file '" + path + "': " + e.what());
  }
}

nlohmann::json read_model_metadata(const std::string& path) {
  auto archive = open_archive(path, torch::kCPU);
  return parse_metadata(read_metadata_text(archive, path), path);
}

bool is_training_checkpoint(const std::string& path) { return starts_like_checkpoint(path); }

void refuse_foreign_model_file(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return;
  const std::string head = file_head(path, 4096);
  std::string what;
  if (head.rfind("PK\x03\x04", 0) == 0) {
    bool deepmd_kit = false;
    const std::string kind = foreign_pytorch_archive(path, deepmd_kit);
    if (kind.empty()) return;
    what = deepmd_kit ? "a DeePMD-kit model file (PyTorch backend, a " + kind + ")"
                      : "a " + kind + " without deepkf's metadata (as DeePMD-kit's .pth and .pt files are)";
  } else if (starts_like_graph_def(head, size)) {
    what = "a DeePMD-kit model file (a TensorFlow frozen graph, as dp freeze writes)";
  } else {
    return;
  }
  throw ModelError("'" + path + "' is " + what +
                   ", which deepkf cannot read: models must be trained by deepkf (deepkf train input.json "
                   "with the DeePMD-kit input, then deepkf freeze); see docs/from-deepmd-kit.md");
}

LoadedModel load_model(const std::string& path, torch::Device device) {
  auto archive = open_archive(path, device);
  const std::string text = read_metadata_text(archive, path);
  const auto meta = parse_metadata(text, path);
  LoadedModel out;
  out.format_version = meta["format_version"].get<int>();
  out.provenance = meta.value("provenance", nlohmann::json::object());
  out.uncertainty_calibration = meta.value(kUncertaintyKey, nlohmann::json());
  try {
    out.config = ModelConfig::from_json(meta.at("model"));
  } catch (const std::exception& e) {
    throw ModelError("model file '" + path + "' has a bad model section: " + e.what());
  }
  out.model = DeepPot(out.config);
  read_training_range(meta, out.model, path);
  prepare_compression(meta, out.model, path);
  try {
    torch::serialize::InputArchive weights;
    archive.read(kModelKey, weights);
    out.model->load(weights);
  } catch (const std::exception& e) {
    throw ModelError("model file '" + path +
                     "' has weights that do not fit its model section: " + first_line(e.what()));
  }
  // Format 1 files were written without checksums.
  if (out.format_version >= 2) {
    verify_checksums(archive, path, text, out.model);
    out.checksum = "crc32, verified (metadata and " +
                   std::to_string(out.model->named_parameters().size() + out.model->named_buffers().size()) +
                   " tensors)";
  }
  out.model->to(device);
  return out;
}

}  // namespace deepkf
