#include "src/learn/FrameScorer.hpp"

#include "src/core/Error.hpp"
#include "src/learn/EnsembleDeviationScorer.hpp"
#include "src/learn/KalmanSigmaScorer.hpp"
#include "src/learn/UniformScorer.hpp"

namespace deepkf {

std::unique_ptr<FrameScorer> make_frame_scorer(const SelectConfig& select, std::uint64_t seed) {
  const std::string& method = select.method;
  if (method == "model_deviation") return std::make_unique<EnsembleDeviationScorer>();
  if (method == "kalman_sigma") return std::make_unique<KalmanSigmaScorer>(select.force_atoms, seed);
  if (method == "random") return std::make_unique<UniformScorer>();
  throw ConfigError("unknown frame selection method \"" + method +
                    "\" (known: \"model_deviation\", \"kalman_sigma\", \"random\")");
}

}  // namespace deepkf
