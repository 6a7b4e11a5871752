#pragma once
// Strict reading of JSON input sections: unknown or misspelt keys are errors that name the key, where it
// was found, and the nearest known key. Keys starting with '_' are comments (DeePMD-kit's convention).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace deepkf {

// Levenshtein edit distance between a and b (case-sensitive).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The known key nearest to `key`, or "" when none is close (distance > max(2, |key|/3)).
std::string nearest_key(const std::string& key, const std::vector<std::string>& known);

// Throws ConfigError when `section` is not an object or has a key outside `known`:
//   "unknown key 'rcutt' in model.descriptor of input.json; did you mean 'rcut'?"
// `path` is the section's dotted path ("model.descriptor"), `file` the input file's name.
void check_keys(const nlohmann::json& section, const std::string& path, const std::vector<std::string>& known,
                const std::string& file);

// Throws ConfigError "'<path>' in <file> is <value>: <rule>", e.g.
//   "'training.numb_steps' in input.json is 0: must be at least 1".
[[noreturn]] void reject_value(const std::string& path, const nlohmann::json& value, const std::string& rule,
                               const std::string& file);

// reject_value unless `ok`.
inline void require(bool ok, const std::string& file, const std::string& path, const nlohmann::json& value,
                    const std::string& rule) {
  if (!ok) reject_value(path, value, rule, file);
}

// Which of `names` (one key under several names, as DeePMD-kit's aliases) `section` sets: "" for none; two
// of them are a ConfigError.
std::string one_of(const nlohmann::json& section, const std::vector<std::string>& names,
                   const std::string& path, const std::string& file);

// Appends to `out` the dotted path of each key of `ignored` that `section` (at `path`, "" for the top
// level) sets: keys accepted for compatibility that have no effect.
void note_ignored(const nlohmann::json& section, const std::string& path,
                  const std::vector<std::string>& ignored, std::vector<std::string>& out);

// a followed by b.
inline std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Typed access with a clear error naming the key path, the expected type and the value found. An integer
// type T takes JSON integers and numbers without a fractional part (1e5) inside T's range, checked before
// converting: "'training.numb_steps' in in.json is 1e+30: must be an integer from ... to ...", and 0.5 is
// "must be an integer", never 0.
template <typename T>
T json_value(const nlohmann::json& value, const std::string& where, const std::string& file);
template <typename T>
T get_or(const nlohmann::json& section, const std::string& key, const T& fallback, const std::string& path,
         const std::string& file);
template <typename T>
T get_required(const nlohmann::json& section, const std::string& key, const std::string& path,
               const std::string& file);

}  // namespace deepkf

#include "src/core/JsonKeys.inl"
