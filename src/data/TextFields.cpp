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

namespace {

// `s` with control characters (a NUL byte in a damaged file) written as \xHH, for an error message.
std::string printable(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

double parse_number(const std::string& s, const std::string& where, const std::string& what) {
  const char* begin = s.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  // The whole word, also past a NUL byte inside it (strtod stops there as at the end of the string).
  if (end == begin || end != begin + s.size())
    throw DataError(fmt::format("{}: {} '{}' is not a number", where, what, printable(s)));
  if (!std::isfinite(v)) throw DataError(fmt::format("{}: {} is non-finite ({})", where, what, s));
  return v;
}

}  // namespace deepkf
