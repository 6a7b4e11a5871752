#include "src/train/BatchSampler.hpp"

#include <numeric>
#include <string>

#include "src/core/Error.hpp"
#include "src/core/Random.hpp"

namespace deepkf {
namespace {
constexpr std::uint64_t kDataOrderStream = 0x64617461;  // "data"
}

BatchSampler::BatchSampler(std::vector<std::int64_t> nframes, std::vector<int> batch_size, std::uint64_t seed,
                           std::vector<int> repeat)
    : nframes_(std::move(nframes)),
      batch_size_(std::move(batch_size)),
      repeat_(std::move(repeat)),
      seed_(seed) {
  if (nframes_.empty()) throw ConfigError("no training systems to sample from");
  if (nframes_.size() != batch_size_.size()) {
    throw ConfigError("batch sizes given for " + std::to_string(batch_size_.size()) +
                      " systems, but there are " + std::to_string(nframes_.size()));
  }
  if (repeat_.empty()) repeat_.assign(nframes_.size(), 1);
  if (repeat_.size() != nframes_.size()) {
    throw ConfigError("repeat counts given for " + std::to_string(repeat_.size()) +
                      " systems, but there are " + std::to_string(nframes_.size()));
  }
  for (std::size_t s = 0; s < nframes_.size(); ++s) {
    if (repeat_[s] < 1)
      throw ConfigError("repeat count of system " + std::to_string(s) + " must be positive");
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
    // repeat[s] shuffles of the frames one after the other: every frame repeat[s] times per epoch.
    std::vector<std::int64_t> frames;
    for (int r = 0; r < repeat_[s]; ++r) {
      std::vector<std::int64_t> pass(static_cast<std::size_t>(nframes_[s]));
      std::iota(pass.begin(), pass.end(), std::int64_t{0});
      shuffle(pass, rng);
      frames.insert(frames.end(), pass.begin(), pass.end());
    }
    // A system's last batch may be smaller.
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
