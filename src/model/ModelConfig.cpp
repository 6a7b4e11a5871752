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
  if (hybrid()) {
    int n = 0;
    for (const auto& p : parts) n += p.embedding_count();
    return n;
  }
  if (type_embedded()) return 1;
  return three_body() ? nt * (nt + 1) / 2 : type_one_side ? nt : nt * nt;
}

std::int64_t ModelConfig::descriptor_dim() const {
  if (hybrid()) {
    std::int64_t n = 0;
    for (const auto& p : parts) n += p.descriptor_dim();
    return n;
  }
  const auto centre_type = attention.concat_output_tebd ? type_embedding.width() : 0;
  if (attention_descriptor()) return embedding_width() * axis_neuron + centre_type;
  if (three_body_tebd()) return embedding_width() + centre_type;
  return descriptor == "se_e2_a" ? embedding_width() * axis_neuron : embedding_width();
}

std::vector<ModelConfig> ModelConfig::descriptor_parts() const {
  return hybrid() ? parts : std::vector<ModelConfig>{*this};
}

void ModelConfig::combine_parts() {
  if (!hybrid() || parts.empty()) return;
  const auto widest = std::max_element(
      parts.begin(), parts.end(), [](const ModelConfig& a, const ModelConfig& b) { return a.rcut < b.rcut; });
  rcut = widest->rcut;
  rcut_smth = widest->rcut_smth;
  sel_auto = std::any_of(parts.begin(), parts.end(), [](const ModelConfig& p) { return p.sel_auto; });
  sel.clear();
  if (sel_auto) return;
  sel.assign(type_map.size(), 0);
  for (const auto& p : parts)
    for (std::size_t t = 0; t < sel.size() && t < p.sel.size(); ++t) sel[t] = std::max(sel[t], p.sel[t]);
}

std::vector<std::int64_t> ModelConfig::part_slots(std::size_t k) const {
  const ModelConfig& p = parts.at(k);
  std::vector<std::int64_t> slots;
  for (int t = 0; t < ntypes(); ++t)
    for (int j = 0; j < p.sel[static_cast<std::size_t>(t)]; ++j) slots.push_back(sel_offset(t) + j);
  return slots;
}

std::int64_t ModelConfig::statistics_slots() const {
  if (!hybrid()) return nnei();
  std::int64_t n = 0;
  for (const auto& p : parts) n += p.nnei();
  return n;
}

std::int64_t ModelConfig::embedding_inputs() const {
  if (hybrid()) {
    std::int64_t n = 0;
    for (const auto& p : parts) n += p.embedding_inputs();
    return n;
  }
  if (three_body_tebd()) return nnei() * nnei();
  if (!three_body()) return nnei();
  std::int64_t n = 0;
  for (std::size_t a = 0; a < sel.size(); ++a) {
    for (std::size_t b = a; b < sel.size(); ++b) {
      const std::int64_t sa = sel[a], sb = sel[b];
      n += a == b ? sa * (sa + 1) / 2 : sa * sb;
    }
  }
  return n;
}

std::string ModelConfig::compression_refusal() const {
  if (attention_descriptor() && (attention.layers > 0 || !stripped())) {
    return "a " + descriptor +
           " model is compressed only in the \"strip\" form (tebd_input_mode) without attention layers "
           "(attn_layer 0), as in DeePMD-kit: its embedding net's input is then s alone; this one has " +
           std::to_string(attention.layers) + " attention layers in \"" + (stripped() ? "strip" : "concat") +
           "\" form";
  }
  if (three_body_tebd() && !stripped()) {
    return "an se_e3_tebd model is compressed only in the \"strip\" form (tebd_input_mode), as in "
           "DeePMD-kit: its embedding net's input is then g_jk alone; this one is in \"concat\" form";
  }
  if (hybrid()) {
    return "a " + descriptor +
           " descriptor's model is not compressed by this version of deepkf: use the uncompressed model";
  }
  if (type_embedded() && !stripped()) {
    return "a model with a type embedding in \"concat\" form (descriptor se_e2_a with model.type_embedding) "
           "is not compressed: its embedding net reads the types beside s; the \"strip\" form (se_a_ebd_v2) "
           "is";
  }
  return "";
}

int ModelConfig::embedding_index(int first, int second) const {
  const int nt = ntypes();
  if (type_embedded()) return 0;
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
  if (hybrid()) check_hybrid();
  if (!(rcut > 0.0))
    throw ConfigError("model key 'model.descriptor.rcut' must be > 0, got " + std::to_string(rcut));
  if (!(rcut_smth >= 0.0 && rcut_smth < rcut)) {
    throw ConfigError("model key 'model.descriptor.rcut_smth' must lie in [0, rcut = " +
                      std::to_string(rcut) + "), got " + std::to_string(rcut_smth));
  }
  for (int s : sel) {
    if (s < 0)
      throw ConfigError("model key 'model.descriptor.sel' has a negative entry " + std::to_string(s));
  }
  if (mixed_types() && sel.size() != 1) {
    throw ConfigError("model key 'model.descriptor.sel' of " + descriptor +
                      " counts the neighbours of all types together: one number, got " +
                      std::to_string(sel.size()) + " entries (unresolved \"auto\"?)");
  }
  if (!mixed_types() && sel.size() != type_map.size()) {
    throw ConfigError("model key 'model.descriptor.sel' has " + std::to_string(sel.size()) +
                      " entries (unresolved \"auto\"?) but type_map has " + std::to_string(type_map.size()));
  }
  if (nnei() == 0) throw ConfigError("model key 'model.descriptor.sel' sums to 0");
  if (embedding_neuron.empty()) throw ConfigError("model key 'model.descriptor.neuron' is empty");
  for (int n : embedding_neuron) {
    if (n < 1)
      throw ConfigError("model key 'model.descriptor.neuron' has a width " + std::to_string(n) + " < 1");
  }
  if (descriptor != "se_e2_a" && descriptor != "se_e2_r" && descriptor != "se_e3" && !hybrid() &&
      !attention_descriptor() && !three_body_tebd())
    throw ConfigError(
        "model key 'model.descriptor.type' must be \"se_e2_a\", \"se_e2_r\", \"se_e3\", \"se_atten\" or "
        "\"se_e3_tebd\", got \"" +
        descriptor + "\"");
  if ((three_body() || three_body_tebd()) && type_one_side) {
    throw ConfigError("model key 'model.descriptor.type_one_side' does not apply to " + descriptor +
                      ", whose embedding nets read pairs of neighbours");
  }
  check_type_embedding();
  if ((descriptor == "se_e2_a" || attention_descriptor()) &&
      (axis_neuron < 1 || axis_neuron > embedding_width())) {
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

void ModelConfig::check_type_embedding() const {
  if (tebd_input_mode != "concat" && tebd_input_mode != "strip") {
    throw ConfigError("model key 'model.descriptor.tebd_input_mode' must be \"concat\" or \"strip\", got \"" +
                      tebd_input_mode + "\"");
  }
  if (mixed_types() && !type_embedded())
    throw ConfigError("model.descriptor " + descriptor + " needs its type embedding (tebd_dim >= 1)");
  if (!type_embedded()) {
    if (tebd_input_mode == "strip")
      throw ConfigError(
          "model.descriptor se_a_ebd_v2 embeds the element types: give the model a 'type_embedding' section");
    return;
  }
  if (descriptor != "se_e2_a" && !mixed_types()) {
    throw ConfigError(
        "model key 'model.type_embedding' works with the se_e2_a descriptor (and se_a_ebd_v2), se_atten and "
        "se_e3_tebd in deepkf, not with " +
        descriptor + ": remove it, or use se_e2_a");
  }
}

void ModelConfig::check_hybrid() const {
  if (parts.empty())
    throw ConfigError(
        "model key 'model.descriptor.list' of a hybrid descriptor is empty: list its descriptors");
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const ModelConfig& p = parts[k];
    const std::string where = "model.descriptor.list[" + std::to_string(k) + "]";
    if (p.hybrid())
      throw ConfigError("model key '" + where + "' is a hybrid inside a hybrid: list its parts instead");
    if (p.type_map != type_map || p.precision != precision)
      throw ConfigError("model key '" + where + "' has another type_map or precision than the model");
    try {
      p.check();
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) + " (in " + where + ")");
    }
  }
  for (std::size_t t = 0; t < sel.size(); ++t) {
    for (const auto& p : parts) {
      if (p.sel[t] > sel[t] || p.rcut > rcut)
        throw ConfigError(
            "a hybrid descriptor's sel or rcut is smaller than one of its parts' (combine_parts)");
    }
  }
}

nlohmann::json ModelConfig::to_json() const {
  if (hybrid()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : parts) list.push_back(p.to_json()["descriptor"]);
    ModelConfig single = *this;  // for the type map and the fitting section
    single.descriptor = "se_e2_a";
    single.parts.clear();
    nlohmann::json json = single.to_json();
    json["descriptor"] = {{"type", "hybrid"}, {"list", list}};
    return json;
  }
  nlohmann::json desc = {{"type", descriptor},
                         {"rcut", rcut},
                         {"rcut_smth", rcut_smth},
                         {"neuron", embedding_neuron},
                         {"resnet_dt", embedding_resnet_dt},
                         {"seed", seed},
                         {"precision", precision_name()}};
  if (!three_body() && !three_body_tebd()) desc["type_one_side"] = type_one_side;
  if (descriptor == "se_e2_a" || attention_descriptor()) desc["axis_neuron"] = axis_neuron;
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
  nlohmann::json model = {{"type_map", type_map}, {"descriptor", desc}, {"fitting_net", fit}};
  if (mixed_types()) {
    // se_atten's and se_e3_tebd's own keys; the type embedding as tebd_dim when it is the descriptor's own
    // linear layer
    auto& d = model["descriptor"];
    d["sel"] = sel.empty() ? d["sel"] : nlohmann::json(sel.front());
    d["tebd_input_mode"] = tebd_input_mode;
    if (attention_descriptor()) {
      attention.write(d);
    } else {
      d["smooth"] = attention.smooth;
      d["concat_output_tebd"] = attention.concat_output_tebd;
      d["set_davg_zero"] = attention.set_davg_zero;
    }
    const auto& te = type_embedding;
    if (te.linear && te.neuron.size() == 1 && !te.resnet_dt) {
      d["tebd_dim"] = te.neuron.front();
      d["use_tebd_bias"] = te.bias;
      return model;
    }
  }
  if (type_embedded()) {
    model["type_embedding"] = type_embedding.to_json(precision_name());
    if (stripped() && !mixed_types()) model["descriptor"]["type"] = "se_a_ebd_v2";
  }
  return model;
}

std::vector<std::string> ModelConfig::differences(const ModelConfig& other) const {
  // Leaves of both documents as JSON pointers ("/descriptor/neuron/2"), compared one by one.
  const nlohmann::json mine = to_json().flatten(), theirs = other.to_json().flatten();
  // sel is not compared while "auto" (for a hybrid: while any part's is)
  const auto compared = [this](const std::string& key) {
    const bool is_sel =
        key.rfind("/descriptor/", 0) == 0 &&
        (key.find("/sel/") != std::string::npos || (key.size() >= 4 && key.substr(key.size() - 4) == "/sel"));
    return key.find("/seed") == std::string::npos && !(sel_auto && is_sel);
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
