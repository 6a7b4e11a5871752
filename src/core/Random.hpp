#pragma once
// Reproducible random numbers. std::mt19937_64's raw output is fixed by the standard, but the standard
// distributions are not (libstdc++ and libc++ differ), so anything that must replay exactly (data order,
// atom selection, restarts) maps raw outputs itself.
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace deepkf {

// Uniform integer in [0, n), n >= 1: rejection of the incomplete last range, then modulo.
inline std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t max = std::mt19937_64::max();
  const std::uint64_t limit = max - (max % n + 1) % n;  // largest value keeping every residue equally likely
  std::uint64_t x = rng();
  while (x > limit) x = rng();
  return x % n;
}

// Fisher-Yates shuffle driven by uniform_below.
template <typename T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(uniform_below(rng, i));
    std::swap(v[i - 1], v[j]);
  }
}

// A generator for a named stream of a seed: independent streams (data order, atom selection, ...) that
// do not shift when another stream draws more numbers.
inline std::mt19937_64 make_stream(std::uint64_t seed, std::uint64_t stream, std::uint64_t index = 0) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(index),
                    static_cast<std::uint32_t>(index >> 32)};
  return std::mt19937_64(seq);
}

}  // namespace deepkf
