#pragma once
// The Kalman covariance an RLEKF checkpoint holds, as a filter over its model's weights: what the predicted
// uncertainty (src/uncertainty/KalmanUncertainty.hpp) is computed from, outside training.
#include <memory>
#include <string>

#include "optim/KalmanFilter.hpp"
#include "src/core/Communicator.hpp"
#include "src/train/Checkpoint.hpp"

namespace deepkf {

// The covariance of an RLEKF checkpoint's weights: a filter over the parameters of ckpt.model with the block
// layout the checkpoint was written with, each rank reading its own blocks from the file (`path`, for
// messages). Throws ConfigError naming the file for a checkpoint of another optimizer or without
// covariance blocks. Collective.
std::unique_ptr<KalmanFilter> checkpoint_covariance(LoadedCheckpoint& ckpt, const std::string& path,
                                                    std::shared_ptr<Communicator> comm);

}  // namespace deepkf
