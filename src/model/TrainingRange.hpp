#pragma once
// The closest neighbour distance per (centre type, neighbour type) seen in a model's training data, which
// bounds the input range its embedding nets were trained on: s(r) lies in [0, s(r_min)] (s decreases with
// r; padding slots and neighbours at the cutoff give 0). `deepkf compress` tabulates the nets over that
// range (docs/compression.md). Recorded by the trainer's statistics pass, kept in checkpoints and model
// files ("training_range" in their metadata); older files have none (empty()).
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace deepkf {

class TrainingRange {
 public:
  TrainingRange() = default;  // unknown: no data scanned
  // ntypes x ntypes distances, none seen yet (+inf).
  explicit TrainingRange(int ntypes);

  bool empty() const { return ntypes_ == 0; }
  int ntypes() const { return ntypes_; }
  // Closest distance (A) between a centre of type c and a neighbour of type t within the cutoff;
  // +inf when the data has no such pair within rcut.
  double min_distance(int c, int t) const;
  bool seen(int c, int t) const { return min_distance(c, t) < std::numeric_limits<double>::infinity(); }
  // Frames the distances were taken from (summed over ranks and merges).
  double frames() const { return frames_; }

  // distance(c, t) = min(distance(c, t), d) for every (c, t) of the row-major ntypes x ntypes `d` (+inf
  // where a batch has no such pair), counting `frames` more frames.
  void add(const std::vector<double>& d, double frames);
  // Pairwise minimum with `other` (same ntypes, or either empty).
  void merge(const TrainingRange& other);
  // The ranks' ranges combined: min over ranks, frames summed (reduce_min / reduce_sum act in place on
  // every rank, e.g. an allreduce).
  template <typename Min, typename Sum>
  void reduce(const Min& reduce_min, const Sum& reduce_sum) {
    if (!empty()) {
      reduce_min(distances_);
      reduce_sum(frames_);
    }
  }

  // {"min_distance": [[...]] (A, null where unseen), "frames": n}; null when empty.
  nlohmann::json to_json() const;
  // The inverse of to_json for a model of ntypes types; null gives an empty range. Throws ModelError naming
  // `where` for a malformed entry.
  static TrainingRange from_json(const nlohmann::json& j, int ntypes, const std::string& where);

 private:
  int ntypes_ = 0;
  std::vector<double> distances_;  // ntypes x ntypes, centre-major
  double frames_ = 0.0;
};

}  // namespace deepkf
