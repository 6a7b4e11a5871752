#pragma once
// Choosing which explored frames to label: the trust window sorts frames into accurate (score < lo),
// candidates (lo <= score < hi) and failed (score >= hi: too far from anything learned for a label to help,
// DP-GEN's convention); candidates are then taken in a seeded random order, skipping near-duplicates of
// frames already taken, up to a cap.
#include <cstdint>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

// A frame of an exploration run: run index, frame index in its trajectory, and its score.
struct FrameRef {
  std::size_t run = 0;
  std::int64_t frame = 0;
  double score = 0.0;
};

struct SelectionCounts {
  std::int64_t explored = 0, accurate = 0, candidate = 0, failed = 0;
  double candidate_fraction() const {
    return explored > 0 ? static_cast<double>(candidate) / static_cast<double>(explored) : 0.0;
  }
};

// Where one score falls in the window [lo, hi); a non-finite score is failed.
enum class FrameClass { kAccurate, kCandidate, kFailed };
FrameClass frame_class(double score, double lo, double hi);
const char* frame_class_name(FrameClass c);  // "accurate", "candidate", "failed"

// Sorts the frames of every run (scores[run][frame]) by the window [lo, hi) (frame_class); appends the
// candidates, in run and frame order, to `candidates`.
SelectionCounts classify_frames(const std::vector<std::vector<double>>& scores, double lo, double hi,
                                std::vector<FrameRef>& candidates);

// RMS over atoms of the minimum-image displacement between frame fa of a and frame fb of b (A), in the cell
// of frame fb; +infinity when the frames do not hold the same atoms (count and types, in order). Frames of
// runs that started from the same structure keep their atom order, so this compares like with like.
double frame_distance(const System& a, std::int64_t fa, const System& b, std::int64_t fb);

// Up to max_frames of `candidates` in a random order fixed by `seed`, each at least min_distance (A, see
// frame_distance) from every frame taken before it. runs[c.run] holds the frames of candidate c.
std::vector<FrameRef> pick_candidates(const std::vector<FrameRef>& candidates,
                                      const std::vector<const System*>& runs, int max_frames,
                                      double min_distance, std::uint64_t seed);

// The median of every finite score (0 when there is none): the level a relative trust window multiplies.
double median_score(const std::vector<std::vector<double>>& scores);

}  // namespace deepkf
