#include "src/core/Error.hpp"

#include <algorithm>
#include <cstdio>

namespace deepkf {

std::string first_line(const std::string& message) {
  const auto start = message.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "no details";
  const auto end = message.find('\n', start);
  return message.substr(
      start, std::min<std::size_t>(end == std::string::npos ? message.size() - start : end - start, 200));
}

std::string exact_number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace deepkf
