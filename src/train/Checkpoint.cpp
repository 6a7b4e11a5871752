#include "src/train/Checkpoint.hpp"

#include <torch/torch.h>

#include <filesystem>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"

namespace deepkf {
namespace {
constexpr const char* kMeta = "deepkf_checkpoint";
constexpr const char* kModel = "model";
constexpr const char* kOptimizer = "optimizer";
}  // namespace

void write_checkpoint(const std::string& path, const DeepPot& model, nlohmann::json meta,
                      torch::serialize::OutputArchive& optimizer) {
  meta["format_version"] = kCheckpointFormatVersion;
  try {
    torch::serialize::OutputArchive weights;
    model->save(weights);
    torch::serialize::OutputArchive archive;
    archive.write(kMeta, c10::IValue(meta.dump()));
    archive.write(kModel, weights);
    archive.write(kOptimizer, optimizer);
    write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
  } catch (const c10::Error& e) {
    throw Error("cannot write checkpoint '" + path + "': " + e.what_without_backtrace());
  }
}

LoadedCheckpoint read_checkpoint(const std::string& path, torch::Device device) {
  if (!std::filesystem::is_regular_file(path)) throw ModelError("checkpoint '" + path + "' does not exist");
  torch::serialize::InputArchive archive;
  LoadedCheckpoint out;
  try {
    archive.load_from(path, device);
  } catch (const std::exception& e) {
    throw ModelError("checkpoint '" + path +
                     "' is corrupt or truncated: " + std::string(e.what()).substr(0, 200));
  }
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
  return out;
}

}  // namespace deepkf
