#pragma once
// Reading the keys of DeePMD-kit's "model" section: each value checked for its type and, when bad, named by
// its key path ("model key 'model.descriptor.rcut' must be a number, got ..."). Used by ModelConfig's
// reader and by the type embedding's.
#include <c10/core/ScalarType.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace deepkf::model_keys {

// section[key], or null when absent.
const nlohmann::json* find(const nlohmann::json& section, const std::string& key);

// section[key] at `path` (e.g. "model.descriptor"), `fallback` when absent; ConfigError for a bad value.
double read_number(const nlohmann::json& section, const std::string& key, double fallback,
                   const std::string& path);
bool read_bool(const nlohmann::json& section, const std::string& key, bool fallback, const std::string& path);
std::vector<int> read_int_list(const nlohmann::json& section, const std::string& key,
                               const std::vector<int>& fallback, const std::string& path,
                               const std::string& file);
// An integer key: a whole number inside int's range (0.5 is an error, not 0).
int read_int(const nlohmann::json& section, const std::string& key, int fallback, const std::string& path,
             const std::string& file);
// section["precision"]: float64 (also "default", or absent) or float32.
c10::ScalarType read_precision(const nlohmann::json& section, const std::string& path);
// section["activation_function"], when given, must be tanh ("default" is tanh).
void require_tanh(const nlohmann::json& section, const std::string& path);
// section["seed"], when given and not null, must be an integer.
void require_integer_seed(const nlohmann::json& section, const std::string& path);

}  // namespace deepkf::model_keys
