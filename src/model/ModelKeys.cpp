#include "src/model/ModelKeys.hpp"

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"

namespace deepkf::model_keys {

namespace {

std::string dump(const nlohmann::json& v) { return v.dump(); }

}  // namespace

const nlohmann::json* find(const nlohmann::json& section, const std::string& key) {
  auto it = section.find(key);
  return it == section.end() ? nullptr : &*it;
}

double read_number(const nlohmann::json& section, const std::string& key, double fallback,
                   const std::string& path) {
  const nlohmann::json* v = find(section, key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) {
    throw ConfigError("model key '" + path + "." + key + "' must be a number, got " + dump(*v));
  }
  return v->get<double>();
}

bool read_bool(const nlohmann::json& section, const std::string& key, bool fallback,
               const std::string& path) {
  const nlohmann::json* v = find(section, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    throw ConfigError("model key '" + path + "." + key + "' must be true or false, got " + dump(*v));
  }
  return v->get<bool>();
}

std::vector<int> read_int_list(const nlohmann::json& section, const std::string& key,
                               const std::vector<int>& fallback, const std::string& path,
                               const std::string& file) {
  const nlohmann::json* v = find(section, key);
  if (v == nullptr) return fallback;
  if (!v->is_array()) {
    throw ConfigError("model key '" + path + "." + key + "' must be a list of integers, got " + dump(*v));
  }
  std::vector<int> out;
  for (const auto& x : *v) {
    if (!x.is_number()) {
      throw ConfigError("model key '" + path + "." + key + "' must be a list of integers, got " + dump(*v));
    }
    out.push_back(json_value<int>(x, path + "." + key + "[" + std::to_string(out.size()) + "]", file));
  }
  return out;
}

int read_int(const nlohmann::json& section, const std::string& key, int fallback, const std::string& path,
             const std::string& file) {
  const nlohmann::json* v = find(section, key);
  if (v == nullptr) return fallback;
  if (!v->is_number())
    throw ConfigError("model key '" + path + "." + key + "' must be an integer, got " + dump(*v));
  return json_value<int>(*v, path + "." + key, file);
}

c10::ScalarType read_precision(const nlohmann::json& section, const std::string& path) {
  const nlohmann::json* v = find(section, "precision");
  if (v == nullptr) return c10::ScalarType::Double;
  if (v->is_string()) {
    const auto s = v->get<std::string>();
    if (s == "float64" || s == "default") return c10::ScalarType::Double;
    if (s == "float32") return c10::ScalarType::Float;
  }
  throw ConfigError("model key '" + path + ".precision' must be \"float64\" or \"float32\", got " + dump(*v));
}

void require_tanh(const nlohmann::json& section, const std::string& path) {
  if (const auto* a = find(section, "activation_function"); a != nullptr && *a != "tanh" && *a != "default")
    throw ConfigError("model key '" + path + ".activation_function' must be \"tanh\", got " + dump(*a));
}

void require_integer_seed(const nlohmann::json& section, const std::string& path) {
  if (const auto* s = find(section, "seed"); s != nullptr && !s->is_null() && !s->is_number_integer())
    throw ConfigError("model key '" + path + ".seed' must be an integer, got " + dump(*s));
}

}  // namespace deepkf::model_keys
