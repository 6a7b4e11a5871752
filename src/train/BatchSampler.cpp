#include "src/train/BatchSampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "src/core/Error.hpp"
#include "src/core/Random.hpp"

namespace deepkf {
namespace {
constexpr std::uint64_t kDataOrderStream = 0x64617461;  // "data"
}

BatchSampler::BatchSampler(std::vector<std::int64_t> nframes, std::vector<int> batch_size, std::uint64_t seed,
                           std::vector<int> repeat, std::vector<double> probability)
    : nframes_(std::move(nframes)),
      batch_size_(std::move(batch_size)),
      repeat_(std::move(repeat)),
      probability_(std::move(probability)),
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
  if (!probability_.empty()) {
    if (probability_.size() != nframes_.size()) {
      throw ConfigError("probabilities given for " + std::to_string(probability_.size()) +
                        " systems, but there are " + std::to_string(nframes_.size()));
    }
    double sum = 0.0;
    for (double p : probability_) {
      if (!(p >= 0.0) || !std::isfinite(p)) throw ConfigError("system probabilities must be finite and >= 0");
      sum += p;
    }
    if (!(sum > 0.0)) throw ConfigError("system probabilities sum to 0");
    for (double& p : probability_) p /= sum;
  }
  build_epoch();
}

std::int64_t BatchSampler::batches_of(std::size_t s) const {
  return std::count_if(order_.begin(), order_.end(),
                       [s](const BatchRef& b) { return b.system == static_cast<int>(s); });
}

void BatchSampler::build_epoch() {
  std::mt19937_64 rng = make_stream(seed_, kDataOrderStream, static_cast<std::uint64_t>(epoch_));
  order_.clear();
  // Each system's batches this epoch: the plain counts, or T p_s rounded systematically (BatchSampler.hpp).
  std::vector<std::int64_t> count(nframes_.size());
  std::int64_t total = 0;
  for (std::size_t s = 0; s < nframes_.size(); ++s)
    total += count[s] = plain_batches(nframes_[s], batch_size_[s], repeat_[s]);
  if (!probability_.empty()) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    double cumulative = 0.0;
    std::int64_t before = 0;
    for (std::size_t s = 0; s < nframes_.size(); ++s) {
      cumulative += probability_[s];
      const double c = s + 1 == nframes_.size()
                           ? static_cast<double>(total)
                           : std::min(cumulative * static_cast<double>(total), static_cast<double>(total));
      const auto upto = static_cast<std::int64_t>(std::floor(c + u));
      count[s] = std::max<std::int64_t>(0, upto - before);
      before = std::max(before, upto);
    }
  }
  const bool weighted = !probability_.empty();
  for (std::size_t s = 0; s < nframes_.size(); ++s) {
    // Shuffles of the frames one after the other: repeat[s] of them (every frame repeat[s] times per
    // epoch), or with probabilities as many as count[s] full batches need.
    const auto b = static_cast<std::size_t>(batch_size_[s]);
    const auto needed = static_cast<std::size_t>(count[s]) * b;
    std::vector<std::int64_t> frames;
    for (int pass = 0; weighted ? frames.size() < needed : pass < repeat_[s]; ++pass) {
      std::vector<std::int64_t> order(static_cast<std::size_t>(nframes_[s]));
      std::iota(order.begin(), order.end(), std::int64_t{0});
      shuffle(order, rng);
      frames.insert(frames.end(), order.begin(), order.end());
    }
    // A system's last batch may be smaller (without probabilities).
    for (std::size_t begin = 0; begin < std::min(frames.size(), needed); begin += b) {
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
