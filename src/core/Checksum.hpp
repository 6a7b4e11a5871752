#pragma once
// CRC-32 (the zlib/PNG/zip polynomial) of file contents, so that a model file or checkpoint whose bytes
// changed after writing (disk, copy or transfer errors) is refused instead of used. Written as 8 hex
// digits; `crc32 FILE` tools give the same value for the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

namespace deepkf {

class Crc32 {
 public:
  Crc32& update(const void* data, std::size_t bytes);
  Crc32& update(const std::string& bytes) { return update(bytes.data(), bytes.size()); }
  std::uint32_t value() const { return crc_; }
  std::string hex() const;  // 8 lowercase hex digits

 private:
  std::uint32_t crc_ = 0;
};

inline std::string crc32_hex(const void* data, std::size_t bytes) {
  return Crc32().update(data, bytes).hex();
}
inline std::string crc32_hex(const std::string& bytes) { return Crc32().update(bytes).hex(); }

}  // namespace deepkf
