#pragma once
// No uncertainty at all: every frame scores 0, so that with select.method "random" (an unbounded window)
// every explored frame is a candidate and the frames to label are drawn uniformly at random. The baseline the
// model-deviation selection is measured against (docs/benchmarks.md, "Online learning").
#include "src/learn/FrameScorer.hpp"

namespace deepkf {

class UniformScorer final : public FrameScorer {
 public:
  std::string describe() const override { return "none (frames drawn at random)"; }
  std::vector<double> score(const ExploredRun& run) const override {
    return std::vector<double>(run.trajectory.steps.size(), 0.0);
  }
};

}  // namespace deepkf
