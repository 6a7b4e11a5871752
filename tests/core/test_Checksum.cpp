#include <string>

#include "src/core/Checksum.hpp"
#include "tests/support/Catch.hpp"

using deepkf::Crc32;

TEST_CASE("CRC-32 matches the standard check value and does not depend on how the bytes are split",
          "[checksum]") {
  // The CRC-32 (zlib, PNG, zip) check value of the nine ASCII digits "123456789".
  CHECK(deepkf::crc32_hex("123456789") == "cbf43926");
  CHECK(deepkf::crc32_hex(std::string()) == "00000000");
  Crc32 split;
  split.update("1234").update("").update("56789");
  CHECK(split.hex() == "cbf43926");
  // One flipped bit changes the value.
  CHECK(deepkf::crc32_hex("123456788") != "cbf43926");
}
