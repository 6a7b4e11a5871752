#include "src/model/TypeEmbeddingConfig.hpp"

#include <algorithm>

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"
#include "src/model/ModelKeys.hpp"

namespace deepkf {

namespace {

constexpr const char* kPath = "model.type_embedding";

[[noreturn]] void bad(const std::string& key, const std::string& want, const nlohmann::json& got,
                      const std::string& file) {
  throw ConfigError("model key '" + std::string(kPath) + "." + key + "' in " + file + " must be " + want +
                    ", got " + got.dump());
}

}  // namespace

nlohmann::json TypeEmbeddingConfig::to_json(const std::string& precision_name) const {
  if (!enabled()) return nullptr;
  return {{"neuron", neuron},       {"activation_function", linear ? "linear" : "tanh"},
          {"resnet_dt", resnet_dt}, {"use_tebd_bias", bias},
          {"trainable", trainable}, {"precision", precision_name}};
}

TypeEmbeddingConfig TypeEmbeddingConfig::read(const nlohmann::json& s, c10::ScalarType model_precision,
                                              const std::string& file) {
  if (!s.is_object()) bad("", "an object", s, file);
  check_keys(s, kPath,
             {"neuron", "activation_function", "resnet_dt", "precision", "trainable", "seed",
              "use_econf_tebd", "use_tebd_bias"},
             file);
  using namespace model_keys;
  TypeEmbeddingConfig c;
  c.neuron = read_int_list(s, "neuron", {8}, kPath, file);
  if (c.neuron.empty() || std::any_of(c.neuron.begin(), c.neuron.end(), [](int w) { return w < 1; }))
    bad("neuron", "a non-empty list of widths of at least 1", s.at("neuron"), file);
  if (const auto* a = find(s, "activation_function"); a != nullptr && (*a == "linear" || *a == "none")) {
    c.linear = true;
  } else {
    require_tanh(s, kPath);
  }
  // "default" is the model's precision; another must be it (one precision for the whole model)
  if (const auto* p = find(s, "precision");
      p != nullptr && *p != "default" && read_precision(s, kPath) != model_precision)
    bad("precision", "the descriptor's precision (one precision for the whole model)", *p, file);
  if (read_bool(s, "use_econf_tebd", false, kPath)) {
    throw ConfigError("model key '" + std::string(kPath) + ".use_econf_tebd' in " + file +
                      " asks for the electronic-configuration type embedding, which deepkf does not build: "
                      "leave it false (each element's one-hot vector is embedded)");
  }
  require_integer_seed(s, kPath);
  c.resnet_dt = read_bool(s, "resnet_dt", c.resnet_dt, kPath);
  c.bias = read_bool(s, "use_tebd_bias", c.bias, kPath);
  c.trainable = read_bool(s, "trainable", c.trainable, kPath);
  return c;
}

}  // namespace deepkf
