#include "src/core/Error.hpp"

#include <algorithm>

namespace deepkf {

std::string first_line(const std::string& message) {
  const auto start = message.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "no details";
  const auto end = message.find('\n', start);
  return message.substr(
      start, std::min<std::size_t>(end == std::string::npos ? message.size() - start : end - start, 200));
}

}  // namespace deepkf
