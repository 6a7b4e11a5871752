#include "src/train/TrainingDevice.hpp"

#include <torch/cuda.h>

#include <algorithm>
#include <thread>

#include "src/core/Error.hpp"

namespace deepkf {

int training_threads(const TrainConfig& cfg, const Communicator& comm) {
  if (cfg.num_threads > 0) return cfg.num_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, comm.size()));
}

torch::Device training_device(const TrainConfig& cfg, const Communicator& comm) {
  if (cfg.device == "cpu") return torch::kCPU;
  if (cfg.device == "auto") {
    return torch::cuda::is_available()
               ? torch::Device(
                     torch::kCUDA,
                     comm.local_rank() % std::max<int>(1, static_cast<int>(torch::cuda::device_count())))
               : torch::Device(torch::kCPU);
  }
  if (!torch::cuda::is_available()) {
    throw ConfigError("device '" + cfg.device + "' in " + cfg.file +
                      " asks for CUDA, but this build of deepkf or this machine has no GPU");
  }
  return cfg.device == "cuda"
             ? torch::Device(torch::kCUDA, comm.local_rank() % static_cast<int>(torch::cuda::device_count()))
             : torch::Device(cfg.device);
}

}  // namespace deepkf
