#pragma once
// Where a rank trains: its LibTorch threads, its device, and the memory it may use there.
#include <torch/types.h>

#include "optim/TrainingStep.hpp"
#include "src/core/Communicator.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf {

// cfg.num_threads, or (when 0) the node's cores shared among its ranks. LibTorch defaults to one thread in a
// plain program, so the trainer sets this number explicitly.
int training_threads(const TrainConfig& cfg, const Communicator& comm);

// cfg.device: "cpu"; "cuda" (the GPU of the node-local rank); "cuda:N"; or "auto" (the node-local rank's GPU
// when there is one, else the CPU). ConfigError naming the input file when CUDA is asked for and there is
// none.
torch::Device training_device(const TrainConfig& cfg, const Communicator& comm);

// Bytes one rank can use on `device`: the host's available memory (src/core/HostMemory.hpp) shared by the
// `ranks_on_node` ranks of the node, or the GPU's free memory; -1 when unknown.
std::int64_t available_memory(const torch::Device& device, int ranks_on_node);

// What a training step may use on one of `nranks` ranks with `available` bytes: the estimate of one batch
// share's activations on the largest training system (MemoryPlan.hpp).
StepResources step_resources(const torch::Device& device, std::int64_t available, int nranks,
                             const TrainingData& data, const ModelConfig& mcfg);
// The same for this run's ranks, with the smallest available_memory() over them (each rank sharing its
// node with comm.local_size() ranks), so that every rank makes the same plan. Collective.
StepResources step_resources(const torch::Device& device, Communicator& comm, const TrainingData& data,
                             const ModelConfig& mcfg);

}  // namespace deepkf
