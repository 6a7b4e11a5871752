#pragma once
// Where a rank trains: its LibTorch threads and its device.
#include <torch/types.h>

#include "src/core/Communicator.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf {

// cfg.num_threads, or (when 0) the cores shared among the ranks. LibTorch defaults to one thread in a plain
// program, so the trainer sets this number explicitly.
int training_threads(const TrainConfig& cfg, const Communicator& comm);

// cfg.device: "cpu"; "cuda" (the GPU of the node-local rank); "cuda:N"; or "auto" (the node-local rank's GPU
// when there is one, else the CPU). ConfigError naming the input file when CUDA is asked for and there is
// none.
torch::Device training_device(const TrainConfig& cfg, const Communicator& comm);

}  // namespace deepkf
