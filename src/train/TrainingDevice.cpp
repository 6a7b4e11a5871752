#include "src/train/TrainingDevice.hpp"

#include <torch/cuda.h>

#include <algorithm>

#include "optim/DeviceMemory.hpp"
#include "optim/MemoryPlan.hpp"
#include "src/core/Cores.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"

namespace deepkf {

int training_threads(const TrainConfig& cfg, const Communicator& comm) {
  if (cfg.num_threads > 0) return cfg.num_threads;
  return threads_per_rank(comm.local_size());
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

std::int64_t available_memory(const torch::Device& device, int ranks_on_node) {
  if (device.is_cuda()) {
#ifdef DEEPKF_WITH_CUDA
    return cuda_free_memory(device.index() < 0 ? 0 : device.index());
#else
    return -1;
#endif
  }
  const std::int64_t host = available_host_memory();
  return host < 0 ? -1 : host / std::max(1, ranks_on_node);
}

StepResources step_resources(const torch::Device& device, std::int64_t available, int nranks,
                             const TrainingData& data, const ModelConfig& mcfg) {
  StepResources res;
  res.available = available;
  res.where = device.is_cuda() ? device.str() : "host";
  std::int64_t frames = 1, natoms = 1;
  double total = 0.0, atoms = 0.0, batch = 0.0;
  for (std::size_t i = 0; i < data.train.size(); ++i) {
    frames = std::max<std::int64_t>(frames, (data.batch_size[i] + nranks - 1) / nranks);
    natoms = std::max(natoms, data.train[i].info().natoms);
    const auto n = static_cast<double>(data.train[i].nframes());
    total += n;
    atoms += n * static_cast<double>(data.train[i].info().natoms);
    batch += n * static_cast<double>(data.batch_size[i]);
  }
  if (total > 0.0) {
    res.mean_frame_atoms = atoms / total;
    res.mean_batch_frames = batch / total;
  }
  const std::int64_t value_bytes = mcfg.precision == torch::kFloat32 ? 4 : 8;
  // every descriptor's embedding inputs (se_e3: slot pairs, not slots) through its nets; se_e3's graph keeps
  // fewer copies of them than se_e2_a's (kThreeBodyGraphCopies)
  res.batch_bytes = 0;
  res.frame_energy_bytes = 0;
  for (const auto& part : mcfg.descriptor_parts()) {
    const auto inputs = part.embedding_inputs();
    res.batch_bytes += batch_activation_bytes(frames, natoms, inputs, part.embedding_neuron, value_bytes,
                                              part.three_body() ? kThreeBodyGraphCopies : kForceGraphCopies);
    res.frame_energy_bytes +=
        batch_activation_bytes(1, natoms, inputs, part.embedding_neuron, value_bytes, kEnergyGraphCopies);
    if (part.attention_descriptor()) {
      // the N x N weights of every centre and attention layer
      const auto pairs = natoms * inputs * inputs * part.attention.layers * value_bytes;
      res.batch_bytes += frames * pairs * kAttentionPairValues;
      res.frame_energy_bytes += pairs * kAttentionEnergyPairValues;
    }
  }
  res.batch_frames = frames;
  return res;
}

StepResources step_resources(const torch::Device& device, Communicator& comm, const TrainingData& data,
                             const ModelConfig& mcfg) {
  double available = -static_cast<double>(available_memory(device, comm.local_size()));
  comm.allreduce_max(&available, 1);  // the minimum
  return step_resources(device, static_cast<std::int64_t>(-available), comm.size(), data, mcfg);
}

}  // namespace deepkf
