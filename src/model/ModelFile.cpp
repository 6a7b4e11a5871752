#include "src/model/ModelFile.hpp"

#include <torch/torch.h>

#include <filesystem>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

namespace {

constexpr const char* kMetadataKey = "deepkf_metadata";
constexpr const char* kModelKey = "deepkf_model";

torch::serialize::InputArchive open_archive(const std::string& path, torch::Device device) {
  if (!std::filesystem::is_regular_file(path)) throw ModelError("model file '" + path + "' does not exist");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const std::exception& e) {
    throw ModelError("model file '" + path + "' is corrupt or truncated (not a readable archive): " +
                     std::string(e.what()).substr(0, 200));
  }
  return archive;
}

nlohmann::json parse_metadata(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue value;
  try {
    archive.read(kMetadataKey, value);
  } catch (const std::exception&) {
    throw ModelError("model file '" + path + "' has no deepkf metadata (not a deepkf model file?)");
  }
  if (!value.isString()) throw ModelError("model file '" + path + "' has metadata that is not a string");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(value.toStringRef());
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

}  // namespace

void save_model(const std::string& path, const DeepPot& model, const nlohmann::json& provenance) {
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
  try {
    torch::serialize::OutputArchive weights;
    model->save(weights);
    torch::serialize::OutputArchive archive;
    archive.write(kMetadataKey, c10::IValue(meta.dump()));
    archive.write(kModelKey, weights);
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
  return parse_metadata(archive, path);
}

LoadedModel load_model(const std::string& path, torch::Device device) {
  auto archive = open_archive(path, device);
  const auto meta = parse_metadata(archive, path);
  LoadedModel out;
  out.format_version = meta["format_version"].get<int>();
  out.provenance = meta.value("provenance", nlohmann::json::object());
  try {
    out.config = ModelConfig::from_json(meta.at("model"));
  } catch (const std::exception& e) {
    throw ModelError("model file '" + path + "' has a bad model section: " + e.what());
  }
  out.model = DeepPot(out.config);
  try {
    torch::serialize::InputArchive weights;
    archive.read(kModelKey, weights);
    out.model->load(weights);
  } catch (const std::exception& e) {
    throw ModelError("model file '" + path + "' has weights that do not fit its model section: " +
                     std::string(e.what()).substr(0, 200));
  }
  out.model->to(device);
  return out;
}

}  // namespace deepkf
