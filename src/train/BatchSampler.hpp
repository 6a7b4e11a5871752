#pragma once
// The order in which training frames are visited: epoch after epoch, each system's frames shuffled and cut
// into batches of that system's batch size, and the batches of all systems shuffled together. A system
// with repeat r > 1 has its frames visited r times per epoch (r shuffles one after the other), which weighs
// it r times in the fit (`training_data.repeat`: new frames of an online-learning iteration). The order
// of epoch e depends only on (seed, e), so a restart needs just the position (epoch, batch) to continue
// exactly, and every rank of a data-parallel job computes the same global batches.
//
// With probabilities p_s (training_data.sys_probs or auto_prob, src/train/SystemProbabilities.hpp) an epoch
// keeps its number of batches T = sum of the unweighted counts and system s gets c_s of them, rounded
// systematically: with u uniform in [0, 1) drawn per epoch, c_s = floor(C_s + u) - floor(C_{s-1} + u) for
// the cumulative C_s = T (p_0 + ... + p_s). So sum c_s = T, c_s differs from T p_s by less than 1, and its
// mean over epochs is T p_s exactly (a system with T p_s = 0.3 gets a batch in 30% of the epochs). A
// system's c_s batches are cut from as many shuffles of its frames as they need, one after the other.
#include <cstdint>
#include <vector>

namespace deepkf {

struct BatchRef {
  int system = 0;                    // index into the training systems
  std::vector<std::int64_t> frames;  // frame indices within that system
};

// A system's batches per epoch without probabilities: ceil(repeat nframes / batch_size).
inline std::int64_t plain_batches(std::int64_t nframes, int batch_size, int repeat = 1) {
  return (nframes * repeat + batch_size - 1) / batch_size;
}

class BatchSampler {
 public:
  // nframes[s]: frames of system s; batch_size[s]: frames per batch for system s (>= 1); repeat[s]: visits of
  // each frame of system s per epoch (>= 1; empty: 1 for every system).
  // probability[s]: the share of each epoch's batches drawn from system s (empty: every frame repeat[s]
  // times per epoch).
  BatchSampler(std::vector<std::int64_t> nframes, std::vector<int> batch_size, std::uint64_t seed,
               std::vector<int> repeat = {}, std::vector<double> probability = {});

  // The next batch; moves to the next epoch after the last batch of an epoch.
  BatchRef next();

  std::int64_t epoch() const { return epoch_; }
  std::int64_t position() const { return position_; }  // batches already taken in this epoch
  std::int64_t batches_per_epoch() const { return static_cast<std::int64_t>(order_.size()); }
  // System s's batches in this epoch.
  std::int64_t batches_of(std::size_t s) const;
  // Restores a position saved from epoch() and position().
  void seek(std::int64_t epoch, std::int64_t position);

 private:
  void build_epoch();

  std::vector<std::int64_t> nframes_;
  std::vector<int> batch_size_;
  std::vector<int> repeat_;
  std::vector<double> probability_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
  std::int64_t position_ = 0;
  std::vector<BatchRef> order_;
};

}  // namespace deepkf
