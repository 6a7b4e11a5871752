#pragma once
// Seeded mutations of a file's bytes, for the reader fuzz driver (fuzz_readers.cpp): the faults a disk, a
// transfer, a hand edit or a foreign writer can leave in a real file. Byte-level mutations favour the first
// 512 bytes (where headers, counts and shapes live); text mutations replace numbers with extreme ones and
// drop or repeat lines; JSON mutations edit the parsed document (keys dropped, misspelt or given values of
// the wrong type or range) so that the mutant still parses and reaches the checks behind the parser.
#include <cstdint>
#include <random>
#include <string>

namespace deepkf::fuzz {

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  // 1 to 4 random byte-level edits: bit flips, byte overwrites, interesting integers and floats written over
  // 1, 2, 4 or 8 bytes, truncation, deletion or repetition of a chunk.
  std::string bytes(std::string data);
  // As bytes(), mixed with edits of text: a number replaced by an extreme value, a line deleted or repeated,
  // a character inserted.
  std::string text(std::string data);
  // A structural edit of a JSON document (falls back to text() when `data` does not parse).
  std::string json(const std::string& data);

  std::uint64_t below(std::uint64_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
  }

 private:
  std::size_t position(std::size_t size);  // biased to the first 512 bytes
  void one_byte_edit(std::string& data);
  void one_text_edit(std::string& data);

  std::mt19937_64 rng_;
};

}  // namespace deepkf::fuzz
