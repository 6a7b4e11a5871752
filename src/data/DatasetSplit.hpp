#pragma once
// Seeded train/validation splits, reproducible across compilers (std::mt19937_64 raw output mapped by
// deepkf::uniform_below, never the implementation-defined standard distributions).
#include <cstdint>
#include <vector>

#include "src/data/FrameSource.hpp"
#include "src/data/System.hpp"

namespace deepkf {

enum class SplitMode {
  kSystem,  // hold out whole systems: round(fraction x nsystems) of them
  kFrame,   // hold out round(fraction x nframes) frames of every system
};

struct SplitResult {
  std::vector<System> train;
  std::vector<System> validation;  // frame-mode parts keep their system's source and type map
};

// The frames of one system that go to one part.
struct FramePart {
  int system = 0;                    // index into the systems split
  std::vector<std::int64_t> frames;  // in increasing order
};

struct SplitIndices {
  std::vector<FramePart> train;       // one part per system with frames left for training, in order
  std::vector<FramePart> validation;  // held-out systems (system mode) or frames (frame mode)
};

// The split of systems with nframes[i] frames, as frame indices, without reading any frame.
// fraction in [0, 1). With fraction > 0 at least one system (frame) is held out and at least one kept
// wherever there are two or more to choose from; a single system (frame) stays in training. Frames and
// systems keep their original order inside each part. Throws ConfigError for a fraction outside [0, 1).
SplitIndices split_frames(const std::vector<std::int64_t>& nframes, double fraction, SplitMode mode,
                          std::uint64_t seed);

// The same split applied to systems in memory.
SplitResult split_systems(const std::vector<System>& systems, double fraction, SplitMode mode,
                          std::uint64_t seed);

}  // namespace deepkf
