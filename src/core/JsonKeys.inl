#pragma once
// Template definitions for JsonKeys.hpp.
#include "src/core/Error.hpp"

namespace deepkf {
namespace detail {

inline std::string qualified(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

template <typename T>
T convert_json(const nlohmann::json& value, const std::string& where, const std::string& file) {
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError("'" + where + "' in " + file + " has the wrong type: " + value.dump() + " (" +
                      value.type_name() + ")");
  }
}

}  // namespace detail

template <typename T>
T get_or(const nlohmann::json& section, const std::string& key, const T& fallback, const std::string& path,
         const std::string& file) {
  if (!section.is_object() || !section.contains(key) || section.at(key).is_null()) return fallback;
  return detail::convert_json<T>(section.at(key), detail::qualified(path, key), file);
}

template <typename T>
T get_required(const nlohmann::json& section, const std::string& key, const std::string& path,
               const std::string& file) {
  if (!section.is_object() || !section.contains(key) || section.at(key).is_null()) {
    throw ConfigError("missing required key '" + detail::qualified(path, key) + "' in " + file);
  }
  return detail::convert_json<T>(section.at(key), detail::qualified(path, key), file);
}

}  // namespace deepkf
