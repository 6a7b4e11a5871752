#pragma once
// The water reference model of the benchmarks with real statistics: random weights (the cost does not
// depend on them) and the descriptor statistics, energy bias and training range of a batch of water frames,
// so that a compressed copy's tables span what a trained model's would.
#include "bench/support/ModelFlops.hpp"
#include "tests/model/ModelTestSupport.hpp"

namespace deepkf::bench {

// water_reference_config() in `precision` with the statistics, bias and training range of batch `b`
// (made with that configuration).
inline DeepPot water_reference_model(const Batch& b, c10::ScalarType precision) {
  auto mc = water_reference_config();
  mc.precision = precision;
  return test::model_with_data_statistics(mc, b);
}

}  // namespace deepkf::bench
