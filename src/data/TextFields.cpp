#include "src/data/TextFields.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "src/core/Error.hpp"

namespace deepkf {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

double parse_number(const std::string& s, const std::string& where, const std::string& what) {
  const char* begin = s.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0')
    throw DataError(fmt::format("{}: {} '{}' is not a number", where, what, s));
  if (!std::isfinite(v)) throw DataError(fmt::format("{}: {} is non-finite ({})", where, what, s));
  return v;
}

}  // namespace deepkf
