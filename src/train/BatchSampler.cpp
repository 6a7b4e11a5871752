#include "src/train/BatchSampler.hpp"

#include <numeric>
#include <string>

#include "src/core/Error.hpp"
#include "src/core/Random.hpp"

namespace deepkf {
namespace {
constexpr std::uint64_t kDataOrderStream = 0x64617461;  // "data"
}

BatchSampler::BatchSampler(std::vector<std::int64_t> nframes, std::vector<int> batch_size, std::uint64_t seed)
    : nframes_(std::move(nframes)), batch_size_(std::move(batch_size)), seed_(seed) {
  if (nframes_.empty()) throw ConfigError("no training systems to sample from");
  if (nframes_.size() != batch_size_.size()) {
    throw ConfigError("batch sizes given for " + std::to_string(batch_size_.size()) +
                      " systems, but there are " + std::to_string(nframes_.size()));
  }
  for (std::size_t s = 0; s < nframes_.size(); ++s) {
    if (nframes_[s] < 1) throw ConfigError("training system " + std::to_string(s) + " has no frames");
    if (batch_size_[s] < 1)
      throw ConfigError("batch size of system " + std::to_string(s) + " must be positive");
  }
  build_epoch();
}

void BatchSampler::build_epoch() {
  std::mt19937_64 rng = make_stream(seed_, kDataOrderStream, static_cast<std::uint64_t>(epoch_));
  order_.clear();
  for (std::size_t s = 0; s < nframes_.size(); ++s) {
    std::vector<std::int64_t> frames(static_cast<std::size_t>(nframes_[s]));
    std::iota(frames.begin(), frames.end(), std::int64_t{0});
    shuffle(frames, rng);
    // Every frame once per epoch; a system's last batch may be smaller.
    const auto b = static_cast<std::size_t>(batch_size_[s]);
    for (std::size_t begin = 0; begin < frames.size(); begin += b) {
      const std::size_t end = std::min(frames.size(), begin + b);
      order_.push_back(BatchRef{static_cast<int>(s), {frames.begin() + begin, frames.begin() + end}});
    }
  }
  shuffle(order_, rng);
}

BatchRef BatchSampler::next() {
  if (position_ >= batches_per_epoch()) {
    ++epoch_;
    position_ = 0;
    build_epoch();
  }
  return order_[static_cast<std::size_t>(position_++)];
}

void BatchSampler::seek(std::int64_t epoch, std::int64_t position) {
  if (epoch < 0 || position < 0) {
    throw ConfigError("cannot seek the data order to epoch " + std::to_string(epoch) + ", batch " +
                      std::to_string(position));
  }
  epoch_ = epoch;
  build_epoch();
  if (position > batches_per_epoch()) {
    throw ConfigError("checkpoint data position " + std::to_string(position) + " is past the " +
                      std::to_string(batches_per_epoch()) +
                      " batches of an epoch: the training data changed");
  }
  position_ = position;
}

}  // namespace deepkf
