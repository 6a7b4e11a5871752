#pragma once
// The changes a packed covariance (optim/PackedCovariance.hpp) went through while a checkpoint was written
// from it block by block as training went on (src/train/CheckpointSaver.hpp, "journal"). A block's values
// in the file are copied at some moment of that write; they hold the first `held` changes of the block's own
// sequence (the changes that act on every block, and those that act on it alone). Applying the rest to the
// loaded block, with the kernels that made them, gives the block as it stood when the checkpoint was
// completed, bit for bit; no second copy of P is ever made, only these low-rank factors are kept.
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace deepkf {

struct CovarianceChange {
  enum class Kind : std::int64_t {
    kJoint = 0,       // P <- (P - U U^T) / lambda, values U [q, N]
    kRankOne = 1,     // P <- (P - K K^T / a) / lambda, values K [N]
    kScale = 2,       // P <- factor P
    kCongruence = 3,  // P_j <- S P_j S for one block j, values s [n_j]
  };
  Kind kind = Kind::kJoint;
  std::int64_t block = -1;  // kCongruence: the block; otherwise -1 (every block)
  torch::Tensor values;     // float64 on the CPU, indexed over all the journal's blocks (N rows)
  double inv_a = 0.0;
  double inv_lambda = 1.0;
  double factor = 1.0;

  bool acts_on(std::int64_t j) const { return block < 0 || block == j; }
};

struct CovarianceJournal {
  std::vector<CovarianceChange> changes;  // in the order they were made
  std::vector<std::int64_t> held;         // per block: how many of its changes its written values hold

  // Into and out of a checkpoint's optimizer state (entries "journal_*"); read() of a state without them
  // gives an empty journal.
  void write(torch::serialize::OutputArchive& archive) const;
  static CovarianceJournal read(torch::serialize::InputArchive& archive);
  bool empty() const { return changes.empty(); }
};

}  // namespace deepkf
