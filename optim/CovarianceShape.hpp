#pragma once
// The shape of the initial covariance, P = p0 diag(d) (docs/rlekf.md, "Shape of the initial covariance").
// Until the measurements have shaped P (thousands of them per block of kf_blocksize weights), a Kalman step
// moves the weights along P h: with P = p0 I that is the raw gradient, dominated by the weights whose
// gradients are largest, and the rest hardly move. A diagonal d_j proportional to 1 / rms(h_j), the root
// mean square of weight j's gradient over the first batches' measurements, gives every weight a first step
// of about the same size relative to its gradient, as Adam's normalised steps do.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "optim/BlockLayout.hpp"

namespace deepkf {

// d_j is clamped to [1 / kShapeRange, kShapeRange] times its mean before the mean is set to 1: a weight
// whose probe gradients are zero (a type pair absent from the first batches) gets the largest value, not an
// infinite one.
constexpr double kShapeRange = 100.0;

// The diagonal d [N] float64 (CPU, mean 1, flat order of `layout`) for rule "gradient" (per weight) or
// "layer" (per parameter tensor: the mean of its weights' squares), from the probe's gradients, each
// measurement normalised to |h| = 1 so that every measurement counts alike. `probe`: per measurement, the
// gradients per parameter (undefined: zero). Rule "identity": ones.
torch::Tensor covariance_shape(const std::string& rule, const std::vector<std::vector<torch::Tensor>>& probe,
                               const BlockLayout& layout);

}  // namespace deepkf
