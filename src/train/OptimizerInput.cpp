#include "src/train/OptimizerInput.hpp"

#include "src/core/Error.hpp"

namespace deepkf {

const nlohmann::json& OptimizerInput::section(const std::string& path) const {
  static const nlohmann::json none;
  const nlohmann::json* s = &doc_;
  std::size_t begin = 0;
  while (begin <= path.size() && !path.empty()) {
    const auto dot = path.find('.', begin);
    const std::string name = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (!s->is_object() || !s->contains(name)) return none;
    s = &s->at(name);
    if (dot == std::string::npos) break;
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

void OptimizerInput::fail(const std::string& path, const nlohmann::json& value,
                          const std::string& rule) const {
  throw ConfigError("'" + path + "' in " + file_ + " is " + value.dump() + ": " + rule);
}

}  // namespace deepkf
