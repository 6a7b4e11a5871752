#include "src/learn/FrameScorer.hpp"

#include "src/core/Error.hpp"
#include "src/learn/EnsembleDeviationScorer.hpp"
#include "src/learn/UniformScorer.hpp"

namespace deepkf {

std::unique_ptr<FrameScorer> make_frame_scorer(const std::string& method) {
  if (method == "model_deviation") return std::make_unique<EnsembleDeviationScorer>();
  if (method == "random") return std::make_unique<UniformScorer>();
  throw ConfigError("unknown frame selection method \"" + method +
                    "\" (known: \"model_deviation\", \"random\")");
}

}  // namespace deepkf
