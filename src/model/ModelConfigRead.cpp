// ModelConfig::parse and read_type_map: DeePMD-kit's "model" section read with its defaults, each bad value
// named by its key.
#include <algorithm>
#include <numeric>

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/model/ModelKeys.hpp"

namespace deepkf {

namespace {

using namespace model_keys;

std::string dump(const nlohmann::json& v) { return v.dump(); }

// The descriptor a DeePMD-kit type names, in its canonical spelling; empty when deepkf does not build it.
std::string canonical_descriptor(const nlohmann::json& type) {
  if (!type.is_string()) return "";
  const auto t = type.get<std::string>();
  if (t == "se_e2_a" || t == "se_a" || t == "se_a_ebd_v2" || t == "se_a_tpe_v2") return "se_e2_a";
  if (t == "se_e2_r" || t == "se_r") return "se_e2_r";
  if (t == "se_e3" || t == "se_at" || t == "se_a_3be" || t == "se_t") return "se_e3";
  if (t == "se_atten" || t == "dpa1" || t == "se_atten_v2") return "se_atten";
  if (t == "se_e3_tebd") return "se_e3_tebd";
  if (t == "hybrid") return "hybrid";
  return "";
}

constexpr const char* kBuilt =
    "one se_e2_a (with or without a type embedding), se_e2_r, se_e3, se_atten, se_e3_tebd or hybrid energy "
    "model";

// DeePMD-kit's se_a_ebd_v2 (also se_a_tpe_v2): se_e2_a with the type embedding in "strip" mode.
bool stripped_type(const nlohmann::json& type) { return type == "se_a_ebd_v2" || type == "se_a_tpe_v2"; }

// A descriptor section at `path`: its type one deepkf builds (a hybrid's parts: not another hybrid), then
// its keys (DeePMD-kit's argument check: se_e2_r has every key of se_e2_a but axis_neuron, se_e3 neither
// axis_neuron nor type_one_side; hybrid has only its list).
void check_descriptor(const nlohmann::json& d, const std::string& path, const std::string& file,
                      bool in_hybrid) {
  const auto* type_value = find(d, "type");
  const std::string type = type_value == nullptr ? "" : canonical_descriptor(*type_value);
  if (type.empty() || (in_hybrid && (type == "hybrid" || type == "se_atten" || type == "se_e3_tebd"))) {
    throw ConfigError("model key '" + path + ".type' in " + file + " is " +
                      (type_value ? dump(*type_value) : std::string("missing")) +
                      ": deepkf builds the descriptors se_e2_a (also written se_a; with a type embedding "
                      "also se_a_ebd_v2), se_e2_r (se_r), se_e3 (se_at, se_a_3be, se_t)" +
                      (in_hybrid
                           ? " inside a hybrid"
                           : ", se_atten (dpa1, se_atten_v2), se_e3_tebd and hybrid combinations of the "
                             "first three"));
  }
  if (type == "hybrid") {
    check_keys(d, path, {"type", "list"}, file);
    const auto* list = find(d, "list");
    if (list == nullptr || !list->is_array() || list->empty()) {
      throw ConfigError("model key '" + path + ".list' in " + file +
                        " must be a non-empty list of descriptors, got " + (list ? dump(*list) : "nothing"));
    }
    for (std::size_t k = 0; k < list->size(); ++k) {
      const std::string where = path + ".list[" + std::to_string(k) + "]";
      if (!(*list)[k].is_object())
        throw ConfigError("model key '" + where + "' in " + file + " must be a descriptor section, got " +
                          dump((*list)[k]));
      check_descriptor((*list)[k], where, file, true);
    }
    return;
  }
  std::vector<std::string> keys = {
      "type",          "sel",       "rcut",          "rcut_smth",           "neuron",
      "resnet_dt",     "seed",      "precision",     "activation_function", "set_davg_zero",
      "exclude_types", "trainable", "env_protection"};
  if (type != "se_e3" && type != "se_e3_tebd") keys.push_back("type_one_side");
  if (type == "se_e2_a" || type == "se_atten") keys.push_back("axis_neuron");
  if (type == "se_atten") {
    // DeePMD-kit's se_atten arguments; se_atten_v2 fixes tebd_input_mode and smooth_type_embedding
    for (const char* k : {"attn", "attn_layer", "attn_dotr", "attn_mask", "scaling_factor", "normalize",
                          "temperature", "trainable_ln", "ln_eps", "concat_output_tebd", "tebd_dim",
                          "use_econf_tebd", "use_tebd_bias", "lmax", "type_map"})
      keys.push_back(k);
    if ((*type_value) != "se_atten_v2") {
      for (const char* k :
           {"tebd_input_mode", "stripped_type_embedding", "smooth_type_embedding", "smooth_type_embdding"})
        keys.push_back(k);
    }
  }
  if (type == "se_e3_tebd") {
    for (const char* k :
         {"tebd_dim", "tebd_input_mode", "smooth", "concat_output_tebd", "use_econf_tebd", "use_tebd_bias"})
      keys.push_back(k);
  }
  check_keys(d, path, keys, file);
}

// The model section's shape before any value is read: DeePMD-kit models and descriptors deepkf does not
// build refused by name, then unknown keys (with the nearest known one) in model, model.descriptor and
// model.fitting_net.
void check_model_keys(const nlohmann::json& model, const std::string& file) {
  // The keys are DeePMD-kit's for these models: those of options not built here are refused by
  // read_descriptor / read_fitting unless they hold their defaults; data_stat_* (statistics sampling),
  // rcond and env_protection take no effect. DeePMD-kit models deepkf does not build are refused by name
  // rather than as unknown keys.
  const std::pair<const char*, const char*> other_models[] = {
      {"models", "several models combined (DeePMD-kit's linear energy model, e.g. with a D3 or pair table)"},
      {"modifier", "a long-range modifier (DPLR)"},
      {"spin", "a spin model"},
      {"use_srtab", "a tabulated short-range pair potential added to the model"},
      {"fitting_net_dict", "a multi-task model"}};
  for (const auto& [key, what] : other_models) {
    if (find(model, key) != nullptr) {
      throw ConfigError("model key 'model." + std::string(key) + "' in " + file + " asks for " + what +
                        ", which deepkf does not build: it trains " + kBuilt);
    }
  }
  if (const auto* d = find(model, "descriptor"); d != nullptr && d->is_object())
    check_descriptor(*d, "model.descriptor", file, false);
  if (const auto* f = find(model, "fitting_net"); f != nullptr && f->is_object()) {
    const auto* type = find(*f, "type");
    if (type != nullptr && *type != "ener") {
      throw ConfigError("model key 'model.fitting_net.type' in " + file + " is " + dump(*type) +
                        ": deepkf fits energies, forces and virials (type \"ener\") only");
    }
  }
  check_keys(model, "model",
             {"type", "type_map", "type_embedding", "descriptor", "fitting_net", "data_stat_nbatch",
              "data_stat_protect"},
             file);
  if (const auto* t = find(model, "type"); t != nullptr && *t != "standard") {
    throw ConfigError("model key 'model.type' must be \"standard\", got " + dump(*t));
  }
  if (const auto* f = find(model, "fitting_net"); f != nullptr && f->is_object()) {
    check_keys(*f, "model.fitting_net",
               {"type", "neuron", "resnet_dt", "seed", "precision", "activation_function", "numb_fparam",
                "numb_aparam", "trainable", "rcond", "atom_ener", "use_aparam_as_mask"},
               file);
    if (const auto* a = find(*f, "atom_ener"); a != nullptr && !(a->is_array() && a->empty())) {
      throw ConfigError("model key 'model.fitting_net.atom_ener' is not supported, got " + dump(*a));
    }
  }
}

// A mixed-type descriptor's own type embedding (se_atten, se_e3_tebd): one linear layer from the one-hot
// vector to tebd_dim numbers (a model section's "type_embedding", read afterwards, replaces it).
void read_own_type_embedding(const nlohmann::json& d, const std::string& dp, const std::string& file,
                             ModelConfig& c) {
  if (read_bool(d, "use_econf_tebd", false, dp)) {
    throw ConfigError("model key '" + dp + ".use_econf_tebd' in " + file +
                      " asks for the electronic-configuration type embedding, which deepkf does not build: "
                      "leave it false (each element's one-hot vector is embedded)");
  }
  if (const auto* tm = find(d, "type_map"); tm != nullptr && !tm->is_null() && *tm != c.type_map) {
    throw ConfigError("model key '" + dp + ".type_map' in " + file + " is " + dump(*tm) +
                      " but model.type_map is " + dump(c.type_map));
  }
  c.type_embedding.neuron = {read_int(d, "tebd_dim", 8, dp, file)};
  if (c.type_embedding.neuron.front() < 1) {
    throw ConfigError("model key '" + dp + ".tebd_dim' in " + file + " must be at least 1, got " +
                      dump(d.at("tebd_dim")));
  }
  c.type_embedding.linear = true;
  c.type_embedding.bias = read_bool(d, "use_tebd_bias", false, dp);
  c.type_embedding.trainable = c.descriptor_trainable;
}

// tebd_input_mode: "concat" or "strip".
std::string read_input_mode(const nlohmann::json& d, const std::string& dp, const std::string& file) {
  const auto* m = find(d, "tebd_input_mode");
  if (m == nullptr) return "concat";
  if (!m->is_string() || (*m != "concat" && *m != "strip"))
    throw ConfigError("model key '" + dp + ".tebd_input_mode' in " + file +
                      " must be \"concat\" or \"strip\", got " + dump(*m));
  return m->get<std::string>();
}

// se_atten's own keys (the common ones are read by read_descriptor_section): its type embedding, input mode
// and attention layers.
void read_attention_section(const nlohmann::json& d, const std::string& dp, const std::string& file,
                            ModelConfig& c) {
  const bool v2 = d["type"] == "se_atten_v2";
  if (const auto* l = find(d, "lmax"); l != nullptr && !l->is_null() && *l != 1) {
    throw ConfigError("model key '" + dp + ".lmax' in " + file + " is " + dump(*l) +
                      ": deepkf builds se_atten's moments of degree 1 only (lmax 1)");
  }
  c.attention = AttentionConfig::read(d, v2, dp, file);
  c.tebd_input_mode = v2 ? "strip" : read_input_mode(d, dp, file);
  if (const auto* s = find(d, "stripped_type_embedding"); !v2 && s != nullptr && !s->is_null())
    c.tebd_input_mode = read_bool(d, "stripped_type_embedding", false, dp) ? "strip" : "concat";
  read_own_type_embedding(d, dp, file, c);
}

// se_e3_tebd's own keys: its type embedding, input mode, smooth gates (strip), concat_output_tebd and
// set_davg_zero, with DeePMD-kit's defaults (all three true).
void read_three_body_tebd_section(const nlohmann::json& d, const std::string& dp, const std::string& file,
                                  ModelConfig& c) {
  c.tebd_input_mode = read_input_mode(d, dp, file);
  c.attention.layers = 0;
  c.attention.smooth = read_bool(d, "smooth", true, dp);
  c.attention.concat_output_tebd = read_bool(d, "concat_output_tebd", true, dp);
  c.attention.set_davg_zero = read_bool(d, "set_davg_zero", true, dp);
  read_own_type_embedding(d, dp, file, c);
}

// One descriptor section (not a hybrid) at path dp into c (its type and keys checked by check_descriptor).
void read_descriptor_section(const nlohmann::json* desc, const std::string& dp, const std::string& file,
                             ModelConfig& c) {
  // DeePMD-kit options this model does not implement: refuse values other than their defaults
  require_tanh(*desc, dp);
  const auto type = canonical_descriptor((*desc)["type"]);
  const bool attention = type == "se_atten";
  const bool mixed = attention || type == "se_e3_tebd";  // sel counts all types together
  if (const auto* z = find(*desc, "set_davg_zero"); !mixed && z != nullptr && *z != false) {
    throw ConfigError("model key '" + dp + ".set_davg_zero' is not supported, got " + dump(*z));
  }
  if (const auto* x = find(*desc, "exclude_types"); x != nullptr && !(x->is_array() && x->empty())) {
    throw ConfigError("model key '" + dp + ".exclude_types' is not supported, got " + dump(*x));
  }
  c.descriptor = type;
  if (type == "se_e3_tebd") c.embedding_neuron = {2, 4, 8};  // DeePMD-kit's default for it
  if (stripped_type((*desc)["type"])) c.tebd_input_mode = "strip";
  c.rcut = read_number(*desc, "rcut", c.rcut, dp);
  c.rcut_smth = read_number(*desc, "rcut_smth", c.rcut_smth, dp);
  const nlohmann::json* sel = find(*desc, "sel");
  if (sel == nullptr) {
    c.sel_auto = true;  // DeePMD-kit's default: "auto"
  } else if (sel->is_string()) {
    const auto s = sel->get<std::string>();
    if (s == "auto") {
      c.sel_auto = true;
    } else if (s.rfind("auto:", 0) == 0) {
      c.sel_auto = true;
      try {
        c.sel_auto_factor = std::stod(s.substr(5));
      } catch (const std::exception&) {
        throw ConfigError("model key '" + dp + ".sel' has a bad factor in " + dump(*sel));
      }
    } else {
      throw ConfigError("model key '" + dp + ".sel' must be a list of integers or \"auto\", got " +
                        dump(*sel));
    }
  } else if (mixed && sel->is_number_integer()) {
    c.sel = {read_int(*desc, "sel", 0, dp, file)};
  } else {
    c.sel = read_int_list(*desc, "sel", {}, dp, file);
    // se_atten, se_e3_tebd: only the total counts (DeePMD-kit: "only the summation of sel[i] matters")
    if (mixed && std::none_of(c.sel.begin(), c.sel.end(), [](int n) { return n < 0; }))
      c.sel = {std::accumulate(c.sel.begin(), c.sel.end(), 0)};
  }
  c.embedding_neuron = read_int_list(*desc, "neuron", c.embedding_neuron, dp, file);
  if (c.descriptor == "se_e2_a" || attention)
    c.axis_neuron = read_int(*desc, "axis_neuron", c.axis_neuron, dp, file);
  c.type_one_side = read_bool(*desc, "type_one_side", c.type_one_side, dp);
  c.embedding_resnet_dt = read_bool(*desc, "resnet_dt", c.embedding_resnet_dt, dp);
  c.descriptor_trainable = read_bool(*desc, "trainable", c.descriptor_trainable, dp);
  if (const auto* s = find(*desc, "seed"); s != nullptr && !s->is_null()) {
    if (!s->is_number_integer())
      throw ConfigError("model key '" + dp + ".seed' must be an integer, got " + dump(*s));
    c.seed = s->get<std::int64_t>();
  }
  c.precision = read_precision(*desc, dp);
  if (attention) read_attention_section(*desc, dp, file, c);
  if (type == "se_e3_tebd") read_three_body_tebd_section(*desc, dp, file, c);
}

// model.descriptor into c: one descriptor, or a hybrid's parts (each with this model's type map) combined.
void read_descriptor(const nlohmann::json& model, const std::string& file, ModelConfig& c) {
  const nlohmann::json* desc = find(model, "descriptor");
  if (desc == nullptr || !desc->is_object()) throw ConfigError("model key 'model.descriptor' is missing");
  if (canonical_descriptor((*desc)["type"]) != "hybrid") {
    read_descriptor_section(desc, "model.descriptor", file, c);
    return;
  }
  const auto& list = (*desc)["list"];
  for (std::size_t k = 0; k < list.size(); ++k) {
    ModelConfig part;
    part.type_map = c.type_map;
    const std::string where = "model.descriptor.list[" + std::to_string(k) + "]";
    read_descriptor_section(&list[k], where, file, part);
    if (k > 0 && part.precision != c.parts.front().precision) {
      throw ConfigError("model key '" + where + ".precision' is " + part.precision_name() +
                        " but list[0]'s is " + c.parts.front().precision_name() +
                        ": a hybrid's descriptors share one precision");
    }
    if (k > 0 && part.descriptor_trainable != c.parts.front().descriptor_trainable) {
      throw ConfigError(
          "model key '" + where +
          ".trainable' differs from list[0]'s: deepkf freezes all of a hybrid's descriptors or none");
    }
    c.parts.push_back(part);
  }
  c.descriptor = "hybrid";
  c.precision = c.parts.front().precision;
  c.seed = c.parts.front().seed;
  c.descriptor_trainable = c.parts.front().descriptor_trainable;
  c.combine_parts();
}

// model.fitting_net into c (after the descriptor, whose precision it must match).
void read_fitting(const nlohmann::json& model, const std::string& file, ModelConfig& c) {
  const nlohmann::json* fit = find(model, "fitting_net");
  if (fit != nullptr) {
    const std::string fp = "model.fitting_net";
    if (!fit->is_object())
      throw ConfigError("model key 'model.fitting_net' must be an object, got " + dump(*fit));
    if (const auto* t = find(*fit, "type");
        t != nullptr && !(t->is_string() && t->get<std::string>() == "ener")) {
      throw ConfigError("model key 'model.fitting_net.type' must be \"ener\", got " + dump(*t));
    }
    require_tanh(*fit, fp);
    for (const char* key : {"numb_fparam", "numb_aparam"}) {
      if (const auto* n = find(*fit, key); n != nullptr && *n != 0) {
        throw ConfigError("model key 'model.fitting_net." + std::string(key) + "' is not supported, got " +
                          dump(*n));
      }
    }
    // Checked, not used: the nets are initialised from one generator seeded by model.descriptor.seed.
    require_integer_seed(*fit, fp);
    c.fitting_neuron = read_int_list(*fit, "neuron", c.fitting_neuron, fp, file);
    c.fitting_resnet_dt = read_bool(*fit, "resnet_dt", c.fitting_resnet_dt, fp);
    if (const auto* t = find(*fit, "trainable"); t != nullptr) {
      // One flag for the whole net, or one per layer: the hidden layers, then the output layer.
      const std::size_t layers = c.fitting_neuron.size() + 1;
      const bool ok =
          t->is_boolean() ||
          (t->is_array() && t->size() == layers &&
           std::all_of(t->begin(), t->end(), [](const nlohmann::json& x) { return x.is_boolean(); }));
      if (!ok) {
        throw ConfigError("model key 'model.fitting_net.trainable' must be true, false or a list of " +
                          std::to_string(layers) +
                          " of them (one per layer of fitting_net.neuron, then the " + "output layer), got " +
                          dump(*t));
      }
      if (t->is_boolean()) {
        if (!t->get<bool>()) c.fitting_trainable.assign(layers, false);
      } else {
        for (const auto& x : *t) c.fitting_trainable.push_back(x.get<bool>());
      }
      if (std::all_of(c.fitting_trainable.begin(), c.fitting_trainable.end(), [](bool b) { return b; }))
        c.fitting_trainable.clear();
    }
    if (find(*fit, "precision") != nullptr && read_precision(*fit, fp) != c.precision) {
      throw ConfigError("model keys 'model.descriptor.precision' and 'model.fitting_net.precision' differ (" +
                        dump(find(model, "descriptor")->value("precision", nlohmann::json("float64"))) +
                        " vs " + dump((*fit)["precision"]) + ")");
    }
  }
}

}  // namespace

std::vector<std::string> ModelConfig::read_type_map(const nlohmann::json& model, const std::string& file) {
  const nlohmann::json* tm = model.is_object() ? find(model, "type_map") : nullptr;
  if (tm == nullptr || !tm->is_array() || tm->empty()) {
    throw ConfigError("model key 'model.type_map' in " + file +
                      " must be a non-empty list of element names, got " +
                      (tm ? dump(*tm) : std::string("nothing")));
  }
  std::vector<std::string> names;
  for (const auto& name : *tm) {
    if (!name.is_string())
      throw ConfigError("model key 'model.type_map' in " + file + " has a non-string entry " + dump(name));
    const auto same = std::find(names.begin(), names.end(), name.get<std::string>());
    if (same != names.end()) {
      throw ConfigError("model key 'model.type_map' in " + file + " names '" + *same + "' twice (entries " +
                        std::to_string(same - names.begin()) + " and " + std::to_string(names.size()) +
                        "): each element once");
    }
    names.push_back(name.get<std::string>());
  }
  return names;
}

ModelConfig ModelConfig::parse(const nlohmann::json& model, const std::string& file) {
  if (!model.is_object()) throw ConfigError("model section must be an object, got " + dump(model));
  check_model_keys(model, file);
  ModelConfig c;
  c.type_map = read_type_map(model, file);
  read_descriptor(model, file, c);
  if (const auto* t = find(model, "type_embedding"); t != nullptr)
    c.type_embedding = TypeEmbeddingConfig::read(*t, c.precision, file);
  read_fitting(model, file, c);
  c.check_type_embedding();  // before "auto" sel is resolved: a wrong combination is said at once
  if (!c.sel_auto) c.check();
  return c;
}

}  // namespace deepkf
