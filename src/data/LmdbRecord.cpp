#include "src/data/LmdbRecord.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

using json = nlohmann::json;

// A numpy dtype as the record names it: kind 'f' (float), 'i' (signed) or 'u' (unsigned), size in bytes.
struct Dtype {
  char kind = 0;
  int size = 0;
  bool swap = false;  // big-endian data ('>'), swapped to the host's little-endian order
};

// numpy's names of the types a record may hold; numpy writes str(dtype) as one of these.
const std::map<std::string, std::string>& dtype_names() {
  static const std::map<std::string, std::string> names = {
      {"float32", "f4"}, {"float64", "f8"}, {"single", "f4"}, {"double", "f8"}, {"int8", "i1"},
      {"int16", "i2"},   {"int32", "i4"},   {"int64", "i8"},  {"uint8", "u1"},  {"uint16", "u2"},
      {"uint32", "u4"},  {"uint64", "u8"},  {"float", "f8"},  {"int", "i8"}};
  return names;
}

// The dtype of `text` ("float32", "<f8", ">i4", "|u1", ...), or kind 0 when it is none of those.
Dtype parse_dtype(std::string text) {
  const auto named = dtype_names().find(text);
  if (named != dtype_names().end()) text = named->second;
  Dtype d;
  if (!text.empty() && std::string("<>=|").find(text[0]) != std::string::npos) {
    d.swap = text[0] == '>';
    text.erase(0, 1);
  }
  if (text.size() != 2 || std::string("fiu").find(text[0]) == std::string::npos) return {};
  const int size = text[1] - '0';
  const bool int_size = size == 1 || size == 2 || size == 4 || size == 8;
  if (!(text[0] == 'f' ? (size == 4 || size == 8) : int_size)) return {};
  d.kind = text[0];
  d.size = size;
  return d;
}

// Item i of `data` (items of dtype d) as a double.
double item(const unsigned char* data, std::size_t i, const Dtype& d) {
  unsigned char b[8] = {};
  std::memcpy(b, data + i * static_cast<std::size_t>(d.size), static_cast<std::size_t>(d.size));
  if (d.swap) std::reverse(b, b + d.size);
  auto as = [&b](auto zero) {
    std::memcpy(&zero, b, sizeof(zero));
    return static_cast<double>(zero);
  };
  if (d.kind == 'f') return d.size == 4 ? as(0.0F) : as(0.0);
  if (d.kind == 'i') {
    if (d.size == 1) return as(std::int8_t{0});
    if (d.size == 2) return as(std::int16_t{0});
    return d.size == 4 ? as(std::int32_t{0}) : as(std::int64_t{0});
  }
  if (d.size == 1) return as(std::uint8_t{0});
  if (d.size == 2) return as(std::uint16_t{0});
  return d.size == 4 ? as(std::uint32_t{0}) : as(std::uint64_t{0});
}

// The raw bytes of an array's "data": msgpack bin (written with use_bin_type) or raw str (without it).
std::string data_bytes(const json& data, const std::string& where, const std::string& name) {
  if (data.is_binary()) {
    const auto& bin = data.get_binary();
    return std::string(bin.begin(), bin.end());
  }
  if (data.is_string()) return data.get<std::string>();
  throw DataError(fmt::format("{}: '{}' has data {}, expected raw bytes", where, name, value_text(data)));
}

// The shape entry of an array, or the one-dimensional shape that `nitems` items fill when there is none.
std::vector<std::int64_t> array_shape(const json& a, std::size_t nitems, const std::string& where,
                                      const std::string& name) {
  if (!a.contains("shape")) return {static_cast<std::int64_t>(nitems)};
  const json& s = a["shape"];
  std::vector<std::int64_t> shape;
  const bool list = s.is_array();
  if (list)
    for (const json& d : s) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (std::uint64_t{1} << 40)) break;
      shape.push_back(d.get<std::int64_t>());
    }
  if (!list || shape.size() != s.size())
    throw DataError(fmt::format("{}: '{}' has shape {}, expected a list of non-negative integers", where,
                                name, value_text(s)));
  return shape;
}

// nlohmann's message without its "[json.exception.parse_error.112] " prefix.
std::string without_exception_id(const std::string& what) {
  const std::string line = first_line(what);
  const auto end = line.find("] ");
  return line.rfind("[json.exception", 0) == 0 && end != std::string::npos ? line.substr(end + 2) : line;
}

}  // namespace

std::string value_text(const json& value) {
  if (value.is_binary()) return fmt::format("<{} bytes>", value.get_binary().size());
  std::string text;
  try {
    text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const json::exception&) {
    text = "<unprintable>";  // binary data nested in the value
  }
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

json decode_record(const std::string& bytes, const std::string& path, const std::string& key) {
  json record;
  try {
    record = json::from_msgpack(bytes);
  } catch (const json::exception& e) {
    throw DataError(fmt::format("LMDB {} key {}: the value is not msgpack ({} bytes): {}", path, key,
                                bytes.size(), without_exception_id(e.what())));
  }
  if (!record.is_object())
    throw DataError(fmt::format("LMDB {} key {}: the value is {}, expected a msgpack map", path, key,
                                value_text(record)));
  return record;
}

RecordArray record_array(const json& record, const std::string& name, const std::string& where) {
  if (!record.contains(name)) throw DataError(fmt::format("{}: no '{}'", where, name));
  const json& a = record[name];
  if (!a.is_object() || !a.contains("type") || !a.contains("data"))
    throw DataError(
        fmt::format("{}: '{}' is {}, expected an array {{type, shape, data}}", where, name, value_text(a)));
  const json& type = a["type"];
  const Dtype d = type.is_string() ? parse_dtype(type.get<std::string>()) : Dtype{};
  if (d.kind == 0)
    throw DataError(fmt::format("{}: '{}' has type {}, expected float32, float64 or an integer type", where,
                                name, value_text(type)));
  const std::string data = data_bytes(a["data"], where, name);
  if (data.size() % static_cast<std::size_t>(d.size) != 0)
    throw DataError(fmt::format("{}: '{}' has {} bytes of data, not a whole number of {}-byte items", where,
                                name, data.size(), d.size));
  const std::size_t nitems = data.size() / static_cast<std::size_t>(d.size);
  RecordArray out;
  out.shape = array_shape(a, nitems, where, name);
  // The product of the dimensions, capped past any real data size so that it cannot overflow.
  constexpr std::uint64_t kCap = std::uint64_t{1} << 50;
  std::uint64_t product = 1;
  for (const auto dim : out.shape) {
    const auto u = static_cast<std::uint64_t>(dim);
    product = (u != 0 && product > kCap / u) ? kCap + 1 : product * u;
  }
  if (product != nitems)
    throw DataError(fmt::format("{}: '{}' has shape {} but {} items of data", where, name,
                                value_text(a["shape"]), nitems));
  out.integral = d.kind != 'f';
  out.values.resize(nitems);
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  for (std::size_t i = 0; i < nitems; ++i) out.values[i] = item(bytes, i, d);
  return out;
}

}  // namespace deepkf
