#include "src/data/DatasetSplit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/core/Error.hpp"
#include "src/core/Random.hpp"

namespace deepkf {

namespace {

constexpr std::uint64_t kSplitStream = 0x73706c6974;  // "split"

// How many of n to hold out: round(fraction n), at least 1 and at most n - 1 when n >= 2 and fraction > 0.
std::int64_t held_out(std::int64_t n, double fraction) {
  if (n < 2 || fraction <= 0.0) return 0;
  const auto k = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(n)));
  return std::clamp<std::int64_t>(k, 1, n - 1);
}

// Marks k of n indices, chosen by a seeded Fisher-Yates shuffle.
std::vector<bool> choose(std::int64_t n, std::int64_t k, std::mt19937_64 rng) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);
  std::vector<bool> chosen(static_cast<std::size_t>(n), false);
  for (std::int64_t i = 0; i < k; ++i)
    chosen[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = true;
  return chosen;
}

}  // namespace

SplitIndices split_frames(const std::vector<std::int64_t>& nframes, double fraction, SplitMode mode,
                          std::uint64_t seed) {
  if (!(fraction >= 0.0 && fraction < 1.0))
    throw ConfigError(fmt::format("validation fraction {} is outside [0, 1)", fraction));
  auto all = [](std::int64_t n) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), std::int64_t{0});
    return v;
  };
  SplitIndices r;
  if (mode == SplitMode::kSystem) {
    const auto n = static_cast<std::int64_t>(nframes.size());
    const auto val = choose(n, held_out(n, fraction), make_stream(seed, kSplitStream));
    for (std::size_t i = 0; i < nframes.size(); ++i)
      (val[i] ? r.validation : r.train).push_back(FramePart{static_cast<int>(i), all(nframes[i])});
    return r;
  }
  for (std::size_t i = 0; i < nframes.size(); ++i) {
    const std::int64_t n = nframes[i];
    const auto val = choose(n, held_out(n, fraction), make_stream(seed, kSplitStream, i + 1));
    FramePart keep{static_cast<int>(i), {}}, hold{static_cast<int>(i), {}};
    for (std::int64_t f = 0; f < n; ++f) (val[static_cast<std::size_t>(f)] ? hold : keep).frames.push_back(f);
    r.train.push_back(std::move(keep));
    if (!hold.frames.empty()) r.validation.push_back(std::move(hold));
  }
  return r;
}

SplitResult split_systems(const std::vector<System>& systems, double fraction, SplitMode mode,
                          std::uint64_t seed) {
  std::vector<std::int64_t> nframes;
  for (const System& s : systems) nframes.push_back(s.nframes);
  const SplitIndices parts = split_frames(nframes, fraction, mode, seed);
  auto take = [&](const FramePart& p) {
    const System& s = systems[static_cast<std::size_t>(p.system)];
    return static_cast<std::int64_t>(p.frames.size()) == s.nframes ? s : select_frames(s, p.frames);
  };
  SplitResult r;
  for (const auto& p : parts.train) r.train.push_back(take(p));
  for (const auto& p : parts.validation) r.validation.push_back(take(p));
  return r;
}

}  // namespace deepkf
