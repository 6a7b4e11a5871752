#pragma once
// Template definitions for JsonKeys.hpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "src/core/Error.hpp"

namespace deepkf {
namespace detail {

inline std::string qualified(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

[[noreturn]] inline void wrong_type(const nlohmann::json& value, const std::string& where,
                                    const std::string& file) {
  throw ConfigError("'" + where + "' in " + file + " has the wrong type: " + value.dump() + " (" +
                    value.type_name() + ")");
}

// An integer of type T: a JSON integer, or a number with no fractional part (1e5), inside T's range. Checked
// before converting, so that nothing wraps around (1e30 is not read as a negative number, nor 0.5 as 0).
template <typename T>
T convert_integer(const nlohmann::json& value, const std::string& where, const std::string& file) {
  using limits = std::numeric_limits<T>;
  const std::string range =
      "must be an integer from " + std::to_string(limits::min()) + " to " + std::to_string(limits::max());
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(limits::max())) reject_value(where, value, range, file);
    return static_cast<T>(u);
  }
  if (value.is_number_integer()) {
    const auto i = value.get<std::int64_t>();
    if ((limits::is_signed && i < static_cast<std::int64_t>(limits::min())) ||
        (!limits::is_signed && i < 0) ||
        (i > 0 && static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(limits::max())))
      reject_value(where, value, range, file);
    return static_cast<T>(i);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) reject_value(where, value, "must be an integer", file);
    // T's range as doubles: [-2^digits, 2^digits) for a signed T, [0, 2^digits) for an unsigned one.
    const double bound = std::ldexp(1.0, limits::digits);
    if (d >= bound || d < (limits::is_signed ? -bound : 0.0)) reject_value(where, value, range, file);
    return static_cast<T>(d);
  }
  wrong_type(value, where, file);
}

template <typename T>
T convert_json(const nlohmann::json& value, const std::string& where, const std::string& file) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return convert_integer<T>(value, where, file);
  } else {
    try {
      return value.get<T>();
    } catch (const nlohmann::json::exception&) {
      wrong_type(value, where, file);
    }
  }
}

}  // namespace detail

template <typename T>
T json_value(const nlohmann::json& value, const std::string& where, const std::string& file) {
  return detail::convert_json<T>(value, where, file);
}

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
