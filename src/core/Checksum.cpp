#include "src/core/Checksum.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace deepkf {

Crc32& Crc32::update(const void* data, std::size_t bytes) {
  // crc32_z takes a size_t length, but chunks keep older zlib builds (uInt lengths) correct too.
  const auto* p = static_cast<const Bytef*>(data);
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  while (bytes > 0) {
    const std::size_t n = std::min(bytes, kChunk);
    crc_ = static_cast<std::uint32_t>(crc32(crc_, p, static_cast<uInt>(n)));
    p += n;
    bytes -= n;
  }
  return *this;
}

std::string Crc32::hex() const {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(crc_));
  return text;
}

}  // namespace deepkf
