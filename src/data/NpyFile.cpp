#include "src/data/NpyFile.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <regex>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// The value of `key` in the header dict, as written by numpy: 'key': value.
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::regex re("['\"]" + key + "['\"]\\s*:\\s*(\\([^)]*\\)|'[^']*'|\"[^\"]*\"|True|False)");
  std::smatch m;
  if (!std::regex_search(header, m, re))
    throw DataError(fmt::format("{}: npy header has no '{}' entry (header: {})", path, key, header));
  return m[1].str();
}

template <typename T>
void convert(const std::vector<char>& raw, double* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

// The dimensions of a shape tuple as numpy writes it: "(3, 4)", "(3,)", "()"; each one plain decimal digits.
std::vector<std::int64_t> parse_shape(const std::string& shape, const std::string& path) {
  const auto bad = [&](const std::string& why) {
    return DataError(fmt::format("{}: bad shape {} in npy header ({})", path, shape, why));
  };
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') throw bad("not a tuple");
  std::vector<std::int64_t> dims;
  std::size_t i = 1;
  const std::size_t end = shape.size() - 1;
  while (i < end) {
    while (i < end && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= end) break;
    std::int64_t d = 0;
    const std::size_t start = i;
    for (; i < end && shape[i] >= '0' && shape[i] <= '9'; ++i) {
      const int digit = shape[i] - '0';
      if (d > (std::numeric_limits<std::int64_t>::max() - digit) / 10) throw bad("a dimension overflows");
      d = 10 * d + digit;
    }
    // numpy may write Python 2 longs as 3L
    if (i < end && shape[i] == 'L') ++i;
    if (i == start || (i < end && shape[i] != ',' && shape[i] != ' '))
      throw bad(fmt::format("'{}' is not a dimension",
                            shape.substr(start, shape.find_first_of(",)", start) - start)));
    dims.push_back(d);
  }
  return dims;
}

}  // namespace

std::int64_t NpyArray::cols() const {
  std::int64_t c = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) c *= shape[i];
  return c;
}

std::int64_t NpyHeader::cols() const {
  std::int64_t c = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) c *= shape[i];
  return c;
}

NpyHeader read_npy_header(const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw DataError(fmt::format("cannot open {}", path));
  char magic[8];
  if (std::fread(magic, 1, 8, f.get()) != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw DataError(fmt::format("{} is not a .npy file (bad magic string)", path));
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  std::int64_t prefix = 8;
  if (major == 1) {
    unsigned char b[2];
    if (std::fread(b, 1, 2, f.get()) != 2) throw DataError(fmt::format("{}: truncated npy header", path));
    header_len = b[0] | (b[1] << 8);
    prefix += 2;
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (std::fread(b, 1, 4, f.get()) != 4) throw DataError(fmt::format("{}: truncated npy header", path));
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
    prefix += 4;
  } else {
    throw DataError(fmt::format("{}: unsupported npy format version {}", path, major));
  }
  // The file's size bounds everything the header may claim.
  if (std::fseek(f.get(), 0, SEEK_END) != 0) throw DataError(fmt::format("cannot seek in {}", path));
  const long file_size = std::ftell(f.get());
  if (file_size < 0 || prefix + static_cast<std::int64_t>(header_len) > file_size)
    throw DataError(fmt::format("{}: truncated npy header ({} bytes announced, the file has {})", path,
                                header_len, file_size));
  std::fseek(f.get(), static_cast<long>(prefix), SEEK_SET);
  std::string header(header_len, '\0');
  if (std::fread(header.data(), 1, header_len, f.get()) != header_len)
    throw DataError(fmt::format("{}: truncated npy header", path));

  NpyHeader h;
  h.path = path;
  h.data_offset = prefix + header_len;
  std::string descr = header_value(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  h.dtype = descr;
  if (header_value(header, "fortran_order", path) == "True")
    throw DataError(
        fmt::format("{} is stored in fortran order; rewrite it in c order (numpy.ascontiguousarray)", path));
  h.shape = parse_shape(header_value(header, "shape", path), path);

  if (descr.size() < 3) throw DataError(fmt::format("{}: unsupported dtype '{}'", path, descr));
  const char order = descr[0];
  h.kind = descr[1];
  h.itemsize = std::atoi(descr.c_str() + 2);
  if (order == '>' && h.itemsize > 1)
    throw DataError(fmt::format("{} is big-endian (dtype '{}'); convert it to little-endian ('<{}{}')", path,
                                descr, h.kind, h.itemsize));
  if (order != '<' && order != '|' && order != '=')
    throw DataError(fmt::format("{}: unsupported dtype '{}'", path, descr));
  const int size = h.itemsize;
  const bool known = (h.kind == 'f' && (size == 4 || size == 8)) ||
                     ((h.kind == 'i' || h.kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8));
  if (!known)
    throw DataError(fmt::format("{}: unsupported dtype '{}' (expected float32, float64 or an integer type)",
                                path, descr));
  // The whole array must be there, so that a short file fails when opened, not in the middle of a run. The
  // product of the dimensions is formed without overflow: any product beyond the file's size is too large.
  const std::int64_t room = (file_size - h.data_offset) / size;
  std::int64_t n = 1;
  bool fits = true;
  for (const std::int64_t d : h.shape) {
    if (d == 0) {
      n = 0;
      fits = true;
      break;
    }
    if (fits && n > room / d) fits = false;
    if (fits) n *= d;
  }
  if (!fits || n > room)
    throw DataError(
        fmt::format("{} is truncated: its shape {} needs more data than the file's {} bytes "
                    "(dtype '{}')",
                    path, header_value(header, "shape", path), file_size, descr));
  return h;
}

void read_npy_rows(const NpyHeader& h, std::int64_t first, std::int64_t count, double* out) {
  if (first < 0 || count < 0 || first + count > h.rows())
    throw DataError(fmt::format("{}: rows [{}, {}) requested of {}", h.path, first, first + count, h.rows()));
  const std::int64_t n = count * h.cols();
  if (n == 0) return;
  FilePtr f(std::fopen(h.path.c_str(), "rb"));
  if (!f) throw DataError(fmt::format("cannot open {}", h.path));
  std::vector<char> raw(static_cast<std::size_t>(n) * static_cast<std::size_t>(h.itemsize));
  const std::int64_t offset = h.data_offset + first * h.cols() * h.itemsize;
  if (std::fseek(f.get(), static_cast<long>(offset), SEEK_SET) != 0 ||
      std::fread(raw.data(), 1, raw.size(), f.get()) != raw.size())
    throw DataError(fmt::format("{} is truncated: cannot read rows [{}, {})", h.path, first, first + count));
  const auto size = h.itemsize;
  if (h.kind == 'f') {
    size == 4 ? convert<float>(raw, out, n) : convert<double>(raw, out, n);
  } else if (h.kind == 'i') {
    if (size == 1) convert<std::int8_t>(raw, out, n);
    if (size == 2) convert<std::int16_t>(raw, out, n);
    if (size == 4) convert<std::int32_t>(raw, out, n);
    if (size == 8) convert<std::int64_t>(raw, out, n);
  } else {
    if (size == 1) convert<std::uint8_t>(raw, out, n);
    if (size == 2) convert<std::uint16_t>(raw, out, n);
    if (size == 4) convert<std::uint32_t>(raw, out, n);
    if (size == 8) convert<std::uint64_t>(raw, out, n);
  }
}

NpyArray read_npy(const std::string& path) {
  const NpyHeader h = read_npy_header(path);
  NpyArray a;
  a.shape = h.shape;
  a.dtype = h.dtype;
  a.data.resize(static_cast<std::size_t>(h.rows() * h.cols()));
  read_npy_rows(h, 0, h.rows(), a.data.data());
  return a;
}

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const double* data,
               NpyDtype dtype) {
  const char* descr = dtype == NpyDtype::kFloat32 ? "<f4" : dtype == NpyDtype::kFloat64 ? "<f8" : "<i8";
  // "(3, 4)", but "(3,)" for one dimension and "()" for none.
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Pad with spaces so that magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');

  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<char> raw;
  if (dtype == NpyDtype::kFloat32) {
    raw.resize(static_cast<std::size_t>(n) * 4);
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(data[i]);
      std::memcpy(raw.data() + 4 * i, &v, 4);
    }
  } else if (dtype == NpyDtype::kFloat64) {
    raw.resize(static_cast<std::size_t>(n) * 8);
    if (n > 0) std::memcpy(raw.data(), data, raw.size());
  } else {
    raw.resize(static_cast<std::size_t>(n) * 8);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::int64_t>(data[i]);
      std::memcpy(raw.data() + 8 * i, &v, 8);
    }
  }

  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) throw DataError(fmt::format("cannot write {}", path));
  const unsigned char prefix[10] = {0x93,
                                    'N',
                                    'U',
                                    'M',
                                    'P',
                                    'Y',
                                    1,
                                    0,
                                    static_cast<unsigned char>(header.size() & 0xff),
                                    static_cast<unsigned char>(header.size() >> 8)};
  bool ok = std::fwrite(prefix, 1, 10, f.get()) == 10;
  ok = ok && std::fwrite(header.data(), 1, header.size(), f.get()) == header.size();
  ok = ok && (raw.empty() || std::fwrite(raw.data(), 1, raw.size(), f.get()) == raw.size());
  ok = (std::fflush(f.get()) == 0) && ok;
  if (!ok) throw DataError(fmt::format("cannot write {} (disk full?)", path));
}

}  // namespace deepkf
