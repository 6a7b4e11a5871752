#pragma once
// The actual errors of one evaluated frame, the quantities an uncertainty estimate is judged against.
#include <torch/types.h>

#include <cstdint>
#include <limits>

#include "src/data/System.hpp"

namespace deepkf {

struct FrameErrors {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double energy = kNone;      // (E - E_ref) / N (eV/atom); NaN without an energy label
  double force_rmse = kNone;  // sqrt(mean over the 3N components of (F - F_ref)^2) (eV/A); NaN without forces
  double force_max = kNone;   // max_i |F_i - F_i^ref| (eV/A); NaN without forces
  torch::Tensor force;        // F - F_ref, natoms x 3, float64 on the CPU; undefined without forces
};

// Frame `frame` of `labels` predicted as `energy` (eV) and `force` (natoms x 3, eV/A), in float64 against
// the labels as stored.
FrameErrors frame_errors(const System& labels, std::int64_t frame, double energy, const double* force);

}  // namespace deepkf
