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

void copy_rows(const std::vector<double>& from, std::vector<double>& to,
               const std::vector<std::int64_t>& frames, std::size_t per_frame) {
  if (from.empty()) return;
  to.reserve(frames.size() * per_frame);
  for (auto f : frames)
    to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(f) * per_frame),
              from.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(f) + 1) * per_frame));
}

}  // namespace

System select_frames(const System& system, const std::vector<std::int64_t>& frames) {
  System out;
  out.source = system.source;
  out.type_map = system.type_map;
  out.atom_types = system.atom_types;
  out.periodic = system.periodic;
  out.natoms = system.natoms;
  out.nframes = static_cast<std::int64_t>(frames.size());
  for (auto f : frames)
    if (f < 0 || f >= system.nframes)
      throw DataError(
          fmt::format("frame {} out of range for {} ({} frames)", f, system.source, system.nframes));
  const auto per_atom3 = static_cast<std::size_t>(3 * system.natoms);
  copy_rows(system.coord, out.coord, frames, per_atom3);
  copy_rows(system.box, out.box, frames, 9);
  copy_rows(system.energy, out.energy, frames, 1);
  copy_rows(system.force, out.force, frames, per_atom3);
  copy_rows(system.virial, out.virial, frames, 9);
  return out;
}

SplitResult split_systems(const std::vector<System>& systems, double fraction, SplitMode mode,
                          std::uint64_t seed) {
  if (!(fraction >= 0.0 && fraction < 1.0))
    throw ConfigError(fmt::format("validation fraction {} is outside [0, 1)", fraction));
  SplitResult r;
  if (mode == SplitMode::kSystem) {
    const auto n = static_cast<std::int64_t>(systems.size());
    const auto val = choose(n, held_out(n, fraction), make_stream(seed, kSplitStream));
    for (std::size_t i = 0; i < systems.size(); ++i) (val[i] ? r.validation : r.train).push_back(systems[i]);
    return r;
  }
  for (std::size_t i = 0; i < systems.size(); ++i) {
    const System& s = systems[i];
    const auto val = choose(s.nframes, held_out(s.nframes, fraction), make_stream(seed, kSplitStream, i + 1));
    std::vector<std::int64_t> keep, hold;
    for (std::int64_t f = 0; f < s.nframes; ++f)
      (val[static_cast<std::size_t>(f)] ? hold : keep).push_back(f);
    if (hold.empty()) {
      r.train.push_back(s);
      continue;
    }
    r.train.push_back(select_frames(s, keep));
    r.validation.push_back(select_frames(s, hold));
  }
  return r;
}

}  // namespace deepkf
