#include "optim/OptimizerInput.hpp"

#include <algorithm>

#include "src/core/Error.hpp"

namespace deepkf {

const nlohmann::json& OptimizerInput::section(const std::string& path) const {
  static const nlohmann::json none;
  const nlohmann::json* s = &doc_;
  for (std::size_t begin = 0; begin < path.size();) {
    const auto dot = std::min(path.find('.', begin), path.size());
    const std::string name = path.substr(begin, dot - begin);
    if (!s->is_object() || !s->contains(name)) return none;
    s = &s->at(name);
    begin = dot + 1;
  }
  return *s;
}

std::string OptimizerInput::find(const std::string& key, const std::vector<std::string>& sections) const {
  std::string found;
  for (const auto& where : sections) {
    const auto& s = section(where);
    if (!s.is_object() || !s.contains(key) || s.at(key).is_null()) continue;
    const std::string path = where + "." + key;
    if (!found.empty()) {
      throw ConfigError("'" + key + "' is given twice in " + file_ + ", as '" + found + "' and as '" + path +
                        "': keep one");
    }
    found = path;
  }
  return found;
}

}  // namespace deepkf
