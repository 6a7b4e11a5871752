#include "src/learn/FrameSelection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/Random.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {
namespace {
constexpr std::uint64_t kSelectionStream = 0x73656c65;  // "sele"
}

FrameClass frame_class(double score, double lo, double hi) {
  if (!std::isfinite(score) || score >= hi) return FrameClass::kFailed;
  return score < lo ? FrameClass::kAccurate : FrameClass::kCandidate;
}

const char* frame_class_name(FrameClass c) {
  switch (c) {
    case FrameClass::kAccurate:
      return "accurate";
    case FrameClass::kCandidate:
      return "candidate";
    case FrameClass::kFailed:
      break;
  }
  return "failed";
}

SelectionCounts classify_frames(const std::vector<std::vector<double>>& scores, double lo, double hi,
                                std::vector<FrameRef>& candidates) {
  SelectionCounts n;
  for (std::size_t r = 0; r < scores.size(); ++r) {
    for (std::size_t f = 0; f < scores[r].size(); ++f) {
      const double s = scores[r][f];
      ++n.explored;
      switch (frame_class(s, lo, hi)) {
        case FrameClass::kFailed:
          ++n.failed;
          break;
        case FrameClass::kAccurate:
          ++n.accurate;
          break;
        case FrameClass::kCandidate:
          ++n.candidate;
          candidates.push_back({r, static_cast<std::int64_t>(f), s});
          break;
      }
    }
  }
  return n;
}

double frame_distance(const System& a, std::int64_t fa, const System& b, std::int64_t fb) {
  if (a.natoms != b.natoms || a.atom_types != b.atom_types || a.type_map != b.type_map || b.box.empty())
    return std::numeric_limits<double>::infinity();
  const Cell cell(b.box.data() + 9 * fb);
  const double* ra = a.coord.data() + 3 * fa * a.natoms;
  const double* rb = b.coord.data() + 3 * fb * b.natoms;
  double sum = 0.0;
  for (std::int64_t i = 0; i < a.natoms; ++i) {
    // d = r_b - r_a moved to its nearest image: f = d H^-1, f -= round(f), d = f H.
    double d[3] = {rb[3 * i] - ra[3 * i], rb[3 * i + 1] - ra[3 * i + 1], rb[3 * i + 2] - ra[3 * i + 2]};
    cell.to_fractional(d, d);
    for (double& x : d) x -= std::round(x);
    cell.to_cartesian(d, d);
    sum += d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  }
  return std::sqrt(sum / static_cast<double>(std::max<std::int64_t>(1, a.natoms)));
}

std::vector<FrameRef> pick_candidates(const std::vector<FrameRef>& candidates,
                                      const std::vector<const System*>& runs, int max_frames,
                                      double min_distance, std::uint64_t seed) {
  std::vector<FrameRef> order = candidates;
  std::mt19937_64 rng = make_stream(seed, kSelectionStream);
  shuffle(order, rng);
  std::vector<FrameRef> picked;
  for (const auto& c : order) {
    if (static_cast<int>(picked.size()) >= max_frames) break;
    const bool near = std::any_of(picked.begin(), picked.end(), [&](const FrameRef& p) {
      return frame_distance(*runs[p.run], p.frame, *runs[c.run], c.frame) < min_distance;
    });
    if (!near) picked.push_back(c);
  }
  return picked;
}

double median_score(const std::vector<std::vector<double>>& scores) {
  std::vector<double> all;
  for (const auto& run : scores)
    for (double s : run)
      if (std::isfinite(s)) all.push_back(s);
  if (all.empty()) return 0.0;
  const auto mid = all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2);
  std::nth_element(all.begin(), mid, all.end());
  if (all.size() % 2 == 1) return *mid;
  return 0.5 * (*mid + *std::max_element(all.begin(), mid));
}

}  // namespace deepkf
