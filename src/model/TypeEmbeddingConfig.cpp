#include "src/model/TypeEmbeddingConfig.hpp"

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"

namespace deepkf {

namespace {

constexpr const char* kPath = "model.type_embedding";

[[noreturn]] void bad(const std::string& key, const std::string& want, const nlohmann::json& got,
                      const std::string& file) {
  throw ConfigError("model key '" + std::string(kPath) + "." + key + "' in " + file + " must be " + want +
                    ", got " + got.dump());
}

bool flag(const nlohmann::json& s, const std::string& key, bool fallback, const std::string& file) {
  if (!s.contains(key)) return fallback;
  if (!s.at(key).is_boolean()) bad(key, "true or false", s.at(key), file);
  return s.at(key).get<bool>();
}

}  // namespace

nlohmann::json TypeEmbeddingConfig::to_json(const std::string& precision_name) const {
  if (!enabled()) return nullptr;
  return {{"neuron", neuron},      {"activation_function", "tanh"}, {"resnet_dt", resnet_dt},
          {"use_tebd_bias", bias}, {"trainable", trainable},        {"precision", precision_name}};
}

TypeEmbeddingConfig TypeEmbeddingConfig::read(const nlohmann::json& s, c10::ScalarType model_precision,
                                              const std::string& file) {
  if (!s.is_object()) bad("", "an object", s, file);
  check_keys(s, kPath,
             {"neuron", "activation_function", "resnet_dt", "precision", "trainable", "seed",
              "use_econf_tebd", "use_tebd_bias"},
             file);
  TypeEmbeddingConfig c;
  c.neuron = {8};
  if (s.contains("neuron")) {
    const auto& n = s.at("neuron");
    if (!n.is_array() || n.empty()) bad("neuron", "a non-empty list of widths", n, file);
    c.neuron.clear();
    for (std::size_t k = 0; k < n.size(); ++k) {
      if (!n[k].is_number()) bad("neuron", "a non-empty list of widths", n, file);
      const int w = json_value<int>(n[k], std::string(kPath) + ".neuron[" + std::to_string(k) + "]", file);
      if (w < 1) bad("neuron", "a list of widths of at least 1", n, file);
      c.neuron.push_back(w);
    }
  }
  if (s.contains("activation_function")) {
    const auto& a = s.at("activation_function");
    if (a != "tanh" && a != "default") bad("activation_function", "\"tanh\"", a, file);
  }
  if (s.contains("precision")) {
    const auto& p = s.at("precision");
    const bool f64 = p == "float64", f32 = p == "float32";
    if (!(p == "default" || f64 || f32)) bad("precision", "\"float64\", \"float32\" or \"default\"", p, file);
    if ((f64 && model_precision != c10::ScalarType::Double) ||
        (f32 && model_precision != c10::ScalarType::Float))
      bad("precision", "the descriptor's precision (one precision for the whole model)", p, file);
  }
  if (flag(s, "use_econf_tebd", false, file)) {
    throw ConfigError("model key '" + std::string(kPath) + ".use_econf_tebd' in " + file +
                      " asks for the electronic-configuration type embedding, which deepkf does not build: "
                      "leave it false (each element's one-hot vector is embedded)");
  }
  if (s.contains("seed") && !s.at("seed").is_null() && !s.at("seed").is_number_integer())
    bad("seed", "an integer", s.at("seed"), file);
  c.resnet_dt = flag(s, "resnet_dt", c.resnet_dt, file);
  c.bias = flag(s, "use_tebd_bias", c.bias, file);
  c.trainable = flag(s, "trainable", c.trainable, file);
  return c;
}

}  // namespace deepkf
