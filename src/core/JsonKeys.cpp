#include "src/core/JsonKeys.hpp"

#include <algorithm>
#include <numeric>

namespace deepkf {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Classic dynamic programme over one row: d[j] = distance(a[0..i), b[0..j)).
  std::vector<std::size_t> d(b.size() + 1);
  std::iota(d.begin(), d.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = d[0];
    d[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = d[j];
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[j] = std::min({above + 1, d[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return d[b.size()];
}

std::string nearest_key(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const auto& candidate : known) {
    const std::size_t dist = edit_distance(key, candidate);
    if (dist < best_distance) {
      best_distance = dist;
      best = candidate;
    }
  }
  return best;
}

void check_keys(const nlohmann::json& section, const std::string& path, const std::vector<std::string>& known,
                const std::string& file) {
  const std::string where = path.empty() ? "the top level" : path;
  if (!section.is_object()) {
    throw ConfigError("'" + where + "' in " + file + " must be an object, found " + section.dump());
  }
  for (const auto& item : section.items()) {
    const std::string& key = item.key();
    if (!key.empty() && key[0] == '_') continue;
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string message = "unknown key '" + key + "' in " + where + " of " + file;
    const std::string near = nearest_key(key, known);
    if (!near.empty()) message += "; did you mean '" + near + "'?";
    throw ConfigError(message);
  }
}

void reject_value(const std::string& path, const nlohmann::json& value, const std::string& rule,
                  const std::string& file) {
  throw ConfigError("'" + path + "' in " + file + " is " + value.dump() + ": " + rule);
}

std::string one_of(const nlohmann::json& section, const std::vector<std::string>& names,
                   const std::string& path, const std::string& file) {
  std::string found;
  for (const auto& name : names) {
    if (!section.contains(name)) continue;
    if (!found.empty()) {
      throw ConfigError("'" + path + "." + found + "' and '" + path + "." + name + "' in " + file +
                        " are the same setting under two names: keep one");
    }
    found = name;
  }
  return found;
}

void note_ignored(const nlohmann::json& section, const std::string& path,
                  const std::vector<std::string>& ignored, std::vector<std::string>& out) {
  for (const auto& key : ignored) {
    if (section.contains(key)) out.push_back(path.empty() ? key : path + "." + key);
  }
}

}  // namespace deepkf
