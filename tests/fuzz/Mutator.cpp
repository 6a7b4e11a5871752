#include "tests/fuzz/Mutator.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

namespace deepkf::fuzz {
namespace {

// Values that break careless parsing: sign, width and range limits, NaN and infinity patterns.
constexpr std::array<std::uint64_t, 12> kIntegers = {0,
                                                     1,
                                                     0xff,
                                                     0x7f,
                                                     0x80,
                                                     0xffff,
                                                     0x7fffffff,
                                                     0x80000000,
                                                     0xffffffff,
                                                     0x7fffffffffffffffULL,
                                                     0x8000000000000000ULL,
                                                     0xffffffffffffffffULL};
constexpr std::array<double, 7> kFloats = {0.0, -0.0, 1e308, -1e308, 1e-320, 0.5, -1.0};
const std::array<const char*, 14> kNumbers = {"0",
                                              "-1",
                                              "99999999999",
                                              "-99999999999",
                                              "1e309",
                                              "nan",
                                              "inf",
                                              "-0",
                                              "1e-320",
                                              "4294967297",
                                              "0.5",
                                              "",
                                              "18446744073709551616",
                                              "+"};

bool is_number_char(char c) { return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e'; }

// Every node of `doc` (objects, arrays and leaves) by its JSON pointer; the root is left out.
void collect(const nlohmann::json& node, const nlohmann::json::json_pointer& here,
             std::vector<nlohmann::json::json_pointer>& out) {
  if (!here.empty()) out.push_back(here);
  if (node.is_object())
    for (auto it = node.begin(); it != node.end(); ++it) collect(it.value(), here / it.key(), out);
  if (node.is_array())
    for (std::size_t i = 0; i < node.size(); ++i) collect(node[i], here / i, out);
}

nlohmann::json odd_value(std::uint64_t pick) {
  switch (pick % 22) {
    case 0:
      return nullptr;
    case 1:
      return true;
    case 2:
      return 0;
    case 3:
      return -1;
    case 4:
      return 0.5;
    case 5:
      return -0.5;
    case 6:
      return 1e30;
    case 7:
      return -1e30;
    case 8:
      return 1e308;
    case 9:
      return 99999999999LL;
    case 10:
      return std::numeric_limits<std::int64_t>::min();
    case 11:
      return std::numeric_limits<std::uint64_t>::max();
    case 12:
      return "";
    case 13:
      return "auto";
    case 14:
      return "x";
    case 15:
      return nlohmann::json::array();
    case 16:
      return nlohmann::json::object();
    case 17:
      return nlohmann::json::array({0});
    case 18:
      return nlohmann::json::array({1e9});
    case 19:
      return nlohmann::json::array({-1, 2});
    case 20:
      return 100000000;
    default:
      return nlohmann::json{{"a", 1}};
  }
}

}  // namespace

std::size_t Mutator::position(std::size_t size) {
  if (size == 0) return 0;
  if (below(2) == 0) return below(std::min<std::size_t>(size, 512));
  return below(size);
}

void Mutator::one_byte_edit(std::string& data) {
  if (data.empty()) {
    data.push_back(static_cast<char>(below(256)));
    return;
  }
  const std::size_t at = position(data.size());
  switch (below(8)) {
    case 0:  // one bit
      data[at] = static_cast<char>(data[at] ^ (1 << below(8)));
      break;
    case 1:  // one byte
      data[at] = static_cast<char>(below(256));
      break;
    case 2: {  // an interesting integer over 1, 2, 4 or 8 bytes, little-endian
      const std::uint64_t v = kIntegers[below(kIntegers.size())];
      const std::size_t width = std::size_t{1} << below(4);
      for (std::size_t k = 0; k < width && at + k < data.size(); ++k)
        data[at + k] = static_cast<char>((v >> (8 * k)) & 0xff);
      break;
    }
    case 3: {  // an interesting float64
      const double v = kFloats[below(kFloats.size())];
      char raw[8];
      std::memcpy(raw, &v, 8);
      for (std::size_t k = 0; k < 8 && at + k < data.size(); ++k) data[at + k] = raw[k];
      break;
    }
    case 4:  // truncated
      data.resize(at);
      break;
    case 5:  // a chunk deleted
      data.erase(at, 1 + below(std::min<std::size_t>(64, data.size() - at)));
      break;
    case 6: {  // a chunk repeated
      const std::string chunk = data.substr(at, 1 + below(64));
      data.insert(position(data.size()), chunk);
      break;
    }
    default:  // a byte inserted
      data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(below(256)));
  }
}

void Mutator::one_text_edit(std::string& data) {
  if (data.empty()) {
    one_byte_edit(data);
    return;
  }
  const std::size_t at = below(data.size());
  switch (below(4)) {
    case 0: {  // the number at or after `at` replaced by an extreme one
      std::size_t b = at;
      while (b < data.size() && !(data[b] >= '0' && data[b] <= '9')) ++b;
      if (b == data.size()) return one_byte_edit(data);
      while (b > 0 && is_number_char(data[b - 1])) --b;
      std::size_t e = b;
      while (e < data.size() && is_number_char(data[e])) ++e;
      data.replace(b, e - b, kNumbers[below(kNumbers.size())]);
      break;
    }
    case 1: {  // the line holding `at` deleted
      const std::size_t b = data.rfind('\n', at) == std::string::npos ? 0 : data.rfind('\n', at) + 1;
      const std::size_t e = data.find('\n', at);
      data.erase(b, e == std::string::npos ? std::string::npos : e - b + 1);
      break;
    }
    case 2: {  // the line holding `at` repeated
      const std::size_t b = data.rfind('\n', at) == std::string::npos ? 0 : data.rfind('\n', at) + 1;
      const std::size_t e = data.find('\n', at);
      data.insert(b, data.substr(b, e == std::string::npos ? std::string::npos : e - b + 1));
      break;
    }
    default: {  // a character that means something to a parser
      const char* specials = " \t\n\"'=:,[]{}#-.eE0";
      data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), specials[below(std::strlen(specials))]);
    }
  }
}

std::string Mutator::bytes(std::string data) {
  for (std::uint64_t n = 1 + below(4); n > 0; --n) one_byte_edit(data);
  return data;
}

std::string Mutator::text(std::string data) {
  for (std::uint64_t n = 1 + below(3); n > 0; --n) {
    if (below(4) == 0)
      one_byte_edit(data);
    else
      one_text_edit(data);
  }
  return data;
}

std::string Mutator::json(const std::string& data) {
  nlohmann::json doc = nlohmann::json::parse(data, nullptr, false);
  if (doc.is_discarded() || below(5) == 0) return text(data);
  for (std::uint64_t n = 1 + below(2); n > 0; --n) {
    std::vector<nlohmann::json::json_pointer> nodes;
    collect(doc, nlohmann::json::json_pointer(), nodes);
    if (nodes.empty()) break;
    const auto ptr = nodes[below(nodes.size())];
    nlohmann::json& parent = doc[ptr.parent_pointer()];
    const std::string& last = ptr.back();
    switch (below(3)) {
      case 0:  // dropped
        if (parent.is_object())
          parent.erase(last);
        else
          parent.erase(static_cast<std::size_t>(std::stoul(last)));
        break;
      case 1:  // its key misspelt (an array element is duplicated instead)
        if (parent.is_object()) {
          std::string key = last;
          const std::size_t at = below(key.size() + 1);
          if (below(2) == 0 && !key.empty())
            key.erase(std::min(at, key.size() - 1), 1);
          else
            key.insert(at, 1, static_cast<char>('a' + below(26)));
          nlohmann::json value = parent[last];
          parent.erase(last);
          parent[key] = value;
        } else {
          parent.push_back(doc[ptr]);
        }
        break;
      default:  // a value of the wrong type or range
        doc[ptr] = odd_value(below(1000));
    }
  }
  return doc.dump(2);
}

}  // namespace deepkf::fuzz
