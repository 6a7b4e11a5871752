#include "src/model/ModelConfig.hpp"

#include <algorithm>
#include <numeric>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// The key-level messages below name the key; the input file is added once, where they do not name it.
std::string naming_file(const std::string& message, const std::string& file) {
  if (file.empty() || file == "the input" || message.find(file) != std::string::npos) return message;
  return file + ": " + message;
}

}  // namespace

std::int64_t ModelConfig::nnei() const { return std::accumulate(sel.begin(), sel.end(), std::int64_t{0}); }

std::int64_t ModelConfig::sel_offset(int t) const {
  return std::accumulate(sel.begin(), sel.begin() + t, std::int64_t{0});
}

int ModelConfig::embedding_count() const {
  const int nt = ntypes();
  return three_body() ? nt * (nt + 1) / 2 : type_one_side ? nt : nt * nt;
}

int ModelConfig::embedding_index(int first, int second) const {
  const int nt = ntypes();
  if (three_body()) {
    // row-major upper triangle: (a, b) with a <= b
    const int a = std::min(first, second), b = std::max(first, second);
    return a * nt - a * (a - 1) / 2 + (b - a);
  }
  return type_one_side ? second : first * nt + second;
}

std::string ModelConfig::precision_name() const {
  return precision == c10::ScalarType::Float ? "float32" : "float64";
}

void ModelConfig::validate() const {
  try {
    check();
  } catch (const ConfigError& e) {
    throw ConfigError(naming_file(e.what(), file));
  }
}

void ModelConfig::check() const {
  if (type_map.empty()) throw ConfigError("model key 'model.type_map' is empty");
  if (!(rcut > 0.0))
    throw ConfigError("model key 'model.descriptor.rcut' must be > 0, got " + std::to_string(rcut));
  if (!(rcut_smth >= 0.0 && rcut_smth < rcut)) {
    throw ConfigError("model key 'model.descriptor.rcut_smth' must lie in [0, rcut = " +
                      std::to_string(rcut) + "), got " + std::to_string(rcut_smth));
  }
  if (sel.size() != type_map.size()) {
    throw ConfigError("model key 'model.descriptor.sel' has " + std::to_string(sel.size()) +
                      " entries (unresolved \"auto\"?) but type_map has " + std::to_string(type_map.size()));
  }
  for (int s : sel) {
    if (s < 0)
      throw ConfigError("model key 'model.descriptor.sel' has a negative entry " + std::to_string(s));
  }
  if (nnei() == 0) throw ConfigError("model key 'model.descriptor.sel' sums to 0");
  if (embedding_neuron.empty()) throw ConfigError("model key 'model.descriptor.neuron' is empty");
  for (int n : embedding_neuron) {
    if (n < 1)
      throw ConfigError("model key 'model.descriptor.neuron' has a width " + std::to_string(n) + " < 1");
  }
  if (descriptor != "se_e2_a" && descriptor != "se_e2_r" && descriptor != "se_e3")
    throw ConfigError(
        "model key 'model.descriptor.type' must be \"se_e2_a\", \"se_e2_r\" or \"se_e3\", got \"" +
        descriptor + "\"");
  if (three_body() && type_one_side) {
    throw ConfigError(
        "model key 'model.descriptor.type_one_side' does not apply to se_e3, whose embedding nets are per "
        "pair of neighbour types");
  }
  if (descriptor == "se_e2_a" && (axis_neuron < 1 || axis_neuron > embedding_width())) {
    throw ConfigError("model key 'model.descriptor.axis_neuron' must lie in [1, " +
                      std::to_string(embedding_width()) + "], got " + std::to_string(axis_neuron));
  }
  for (int n : fitting_neuron) {
    if (n < 1)
      throw ConfigError("model key 'model.fitting_net.neuron' has a width " + std::to_string(n) + " < 1");
  }
  if (!fitting_trainable.empty() && fitting_trainable.size() != fitting_neuron.size() + 1) {
    throw ConfigError("model key 'model.fitting_net.trainable' has " +
                      std::to_string(fitting_trainable.size()) + " entries, but the fitting net has " +
                      std::to_string(fitting_neuron.size() + 1) + " layers");
  }
  if (!descriptor_trainable && !fitting_trainable.empty() &&
      std::none_of(fitting_trainable.begin(), fitting_trainable.end(), [](bool b) { return b; })) {
    throw ConfigError(
        "model keys 'model.descriptor.trainable' and 'model.fitting_net.trainable' are both false: nothing "
        "would be trained");
  }
  if (precision != c10::ScalarType::Double && precision != c10::ScalarType::Float) {
    throw ConfigError("model precision must be float64 or float32");
  }
}

ModelConfig ModelConfig::from_json(const nlohmann::json& model, const std::string& file) {
  try {
    ModelConfig c = parse(model, file);
    if (file != "the input") c.file = file;
    return c;
  } catch (const ConfigError& e) {
    throw ConfigError(naming_file(e.what(), file));
  }
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json desc = {{"type", descriptor},
                         {"rcut", rcut},
                         {"rcut_smth", rcut_smth},
                         {"neuron", embedding_neuron},
                         {"resnet_dt", embedding_resnet_dt},
                         {"seed", seed},
                         {"precision", precision_name()}};
  if (!three_body()) desc["type_one_side"] = type_one_side;
  if (descriptor == "se_e2_a") desc["axis_neuron"] = axis_neuron;
  if (!descriptor_trainable) desc["trainable"] = false;
  if (sel_auto && sel.empty()) {
    desc["sel"] = "auto:" + std::to_string(sel_auto_factor);
  } else {
    desc["sel"] = sel;
  }
  nlohmann::json fit = {{"type", "ener"},
                        {"neuron", fitting_neuron},
                        {"resnet_dt", fitting_resnet_dt},
                        {"seed", seed},
                        {"precision", precision_name()}};
  if (!fitting_trainable.empty()) fit["trainable"] = fitting_trainable;
  return {{"type_map", type_map}, {"descriptor", desc}, {"fitting_net", fit}};
}

std::vector<std::string> ModelConfig::differences(const ModelConfig& other) const {
  // Leaves of both documents as JSON pointers ("/descriptor/neuron/2"), compared one by one.
  const nlohmann::json mine = to_json().flatten(), theirs = other.to_json().flatten();
  const auto compared = [this](const std::string& key) {
    return key.find("/seed") == std::string::npos && !(sel_auto && key.rfind("/descriptor/sel", 0) == 0);
  };
  const auto entry = [](std::string key, const nlohmann::json* a, const nlohmann::json* b) {
    for (auto& c : key) c = c == '/' ? '.' : c;
    return key.substr(1) + ": " + (a ? a->dump() : "none") + " vs " + (b ? b->dump() : "none");
  };
  std::vector<std::string> found;
  for (const auto& [key, value] : mine.items()) {
    const auto it = theirs.find(key);
    if (compared(key) && (it == theirs.end() || *it != value))
      found.push_back(entry(key, &value, it == theirs.end() ? nullptr : &*it));
  }
  for (const auto& [key, value] : theirs.items())
    if (compared(key) && !mine.contains(key)) found.push_back(entry(key, nullptr, &value));
  return found;
}

}  // namespace deepkf
