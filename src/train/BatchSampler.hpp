#pragma once
// The order in which training frames are visited: epoch after epoch, each system's frames shuffled and cut
// into batches of that system's batch size, and the batches of all systems shuffled together. A system
// with repeat r > 1 has its frames visited r times per epoch (r shuffles one after the other), which weighs
// it r times in the fit (`training_data.repeat`: new frames of an online-learning iteration). The order
// of epoch e depends only on (seed, e), so a restart needs just the position (epoch, batch) to continue
// exactly, and every rank of a data-parallel job computes the same global batches.
#include <cstdint>
#include <vector>

namespace deepkf {

struct BatchRef {
  int system = 0;                    // index into the training systems
  std::vector<std::int64_t> frames;  // frame indices within that system
};

class BatchSampler {
 public:
  // nframes[s]: frames of system s; batch_size[s]: frames per batch for system s (>= 1); repeat[s]: visits of
  // each frame of system s per epoch (>= 1; empty: 1 for every system).
  BatchSampler(std::vector<std::int64_t> nframes, std::vector<int> batch_size, std::uint64_t seed,
               std::vector<int> repeat = {});

  // The next batch; moves to the next epoch after the last batch of an epoch.
  BatchRef next();

  std::int64_t epoch() const { return epoch_; }
  std::int64_t position() const { return position_; }  // batches already taken in this epoch
  std::int64_t batches_per_epoch() const { return static_cast<std::int64_t>(order_.size()); }
  // Restores a position saved from epoch() and position().
  void seek(std::int64_t epoch, std::int64_t position);

 private:
  void build_epoch();

  std::vector<std::int64_t> nframes_;
  std::vector<int> batch_size_;
  std::vector<int> repeat_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
  std::int64_t position_ = 0;
  std::vector<BatchRef> order_;
};

}  // namespace deepkf
