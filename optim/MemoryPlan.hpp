#pragma once
// The memory one rank of an RLEKF run needs, worked out before anything large is allocated, and the
// covariance settings that fit (docs/input.md, "Memory plan"):
//   covariance  sum over the rank's blocks of n_i (n_i + 1) / 2 values (optim/BlockLayout.hpp ownership)
//   vectors     the weights, their gradient and the filter's float64 vectors h, K and the pending K: 6 N
//               values; a joint update of m measurements m more gradients, float64 columns of H, Y, U
//               (kJointValuesPerWeight each) and the CPU sweep's partial sums, on a GPU m times the tiles'
//               partial sums batch       one batch's activations with the graph kept for the force
//               measurement (estimate below)
// Where kf_blocksize or p_precision is "auto", the first of 5120, 4096, 3072, 2048 in float64, then the
// same in float32, then 1024, 512, 256 in float64 and float32, whose total fits in 90 % of what the rank
// can use. An explicit choice is kept; when it does not fit, or nothing does, ResourceError states the need
// and the options that would fit, each with its figure.
#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

struct MemoryNeed {
  std::vector<std::vector<std::int64_t>> shapes;  // the model's parameter shapes, in registration order
  std::int64_t value_bytes = 8;                   // bytes per weight (model precision)
  std::int64_t batch_bytes = 0;  // estimate for one batch on one rank (batch_activation_bytes)
  int nranks = 1;
  // Bytes one rank can use, -1 when unknown (then nothing is checked and "auto" means 5120, float64).
  std::int64_t available = -1;
  std::string where = "host";  // "host" or the device, for messages
  // Measurements of one joint Kalman update (kf_update "joint"), 1 for the sequential update: each adds its
  // gradient, its columns of H, Y and the pending U, and its share of the sweep's partial sums.
  int measurements = 1;
};

struct MemoryPlan {
  std::int64_t blocksize = 5120;
  std::string p_precision = "float64";
  std::int64_t covariance_bytes = 0;  // on the rank holding most
  std::int64_t other_bytes = 0;       // vectors and batch
  std::int64_t available = -1;
  std::string where = "host";

  // "memory plan: kf_blocksize 5120, float64 covariance: 1.2 GiB + 35.0 MiB (...) per rank, 20.1 GiB
  // available (host)"
  std::string describe() const;
};

// Whether `bytes` fit in what a rank can use: 90 % of `available` (the rest for LibTorch, MPI and the data
// reader); always when `available` is unknown (-1).
bool fits_in_memory(std::int64_t bytes, std::int64_t available);

// blocksize 0 and precision "auto" ask for a choice (see above); with max_blocksize > 0, a choice among
// blocks of at most that many weights.
MemoryPlan plan_memory(const MemoryNeed& need, std::int64_t blocksize, const std::string& precision,
                       std::int64_t max_blocksize = 0);

// Copies of the activations a measurement's graph keeps. The force measurement: forward values, their
// gradients and the gradients of those for dF/dw; measured 331 MB of peak memory per frame of 192-atom water
// with the DeePMD-kit water reference model (slots 138, embedding 25-50-100), against 347 MB estimated
// with 9. The energy measurement (forward values for one backward pass): 4 replayed frames raised that
// run's peak by 145 MB, about 95 MB per frame of the energy graph, 2.6 copies; 3 are counted
// (docs/benchmarks.md, "Memory plan").
constexpr std::int64_t kForceGraphCopies = 9;
// float64 values per weight and measurement of a joint update: its columns of H, Y and the pending U, and
// the zero U of a sweep with none pending (the CPU sweep's partial sums are counted block by block).
constexpr std::int64_t kJointValuesPerWeight = 4;
constexpr std::int64_t kEnergyGraphCopies = 3;
// se_e3's force graph, per pair input (measured: DeePMD-kit's se_e3 water example, 192 atoms, sel 40/76,
// peaks at 5.3 GiB beside its 4.4 GiB covariance, about 2.9 copies of its 6,786 pair inputs x 21 values).
constexpr std::int64_t kThreeBodyGraphCopies = 4;
// se_atten's attention layers, values per pair of neighbour slots (j, k) of one centre and layer in a force
// graph with its parameter gradient (measured: DeePMD-kit's se_atten dpa1 water example, 192 atoms, sel 120,
// attn 128, two layers, float64: 4.6 GB peak for one frame, about 90 values per slot pair and layer beyond
// the nets' activations); an energy graph keeps about a third of them.
constexpr std::int64_t kAttentionPairValues = 90;
constexpr std::int64_t kAttentionEnergyPairValues = 30;

// Estimate of the activations of a measurement's graph over `frames` frames on a rank: `copies` of the
// embedding nets' outputs and the environment matrix per neighbour slot, frames x atoms x slots x (sum of
// embedding widths + 4 + 3) values.
std::int64_t batch_activation_bytes(std::int64_t frames, std::int64_t natoms, std::int64_t slots,
                                    const std::vector<int>& embedding_widths, std::int64_t value_bytes,
                                    std::int64_t copies = kForceGraphCopies);

}  // namespace deepkf
