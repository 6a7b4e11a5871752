#include "src/core/JsonFile.hpp"

#include <fstream>

#include "src/core/Error.hpp"

namespace deepkf {

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot open " + what + path);
  try {
    return nlohmann::json::parse(in, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(what + path + " is not valid JSON: " + e.what());
  }
}

}  // namespace deepkf
