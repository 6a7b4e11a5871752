// KalmanFilter's state in a checkpoint: the scalars and the weights in an archive, the covariance blocks
// streamed one at a time (src/train/Checkpoint.hpp), and reading both back.
#include <torch/torch.h>

#include <functional>
#include <string>

#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

namespace {

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  if (!archive.try_read(key, t)) throw OptimError("kalman optimizer state: entry '" + key + "' is missing");
  return t;
}

}  // namespace

void KalmanFilter::write_scalars(torch::serialize::OutputArchive& state) const {
  // Format 2: P_i as packed upper triangles (format 1 held dense [n_i, n_i] blocks).
  state.write("format_version", torch::full({}, std::int64_t{2}, torch::kInt64));
  state.write("lambda", torch::full({}, lambda_, torch::kFloat64));
  state.write("steps", torch::full({}, steps_, torch::kInt64));
  state.write("blocksize", torch::full({}, options_.blocksize, torch::kInt64));
  state.write("p0", torch::full({}, p0_, torch::kFloat64));
  std::vector<std::int64_t> sizes;
  for (const auto& b : layout_.blocks()) sizes.push_back(b.size());
  state.write("block_sizes", torch::tensor(sizes, torch::kInt64));
}

void KalmanFilter::save_state(torch::serialize::OutputArchive& archive) const {
  torch::serialize::OutputArchive state;
  write_scalars(state);
  archive.write("kalman", state);
}

void KalmanFilter::stream_covariance(const std::function<void(std::int64_t, const torch::Tensor&)>& sink) {
  torch::NoGradGuard no_grad;
  const auto& blocks = layout_.blocks();
  const int me = comm_->rank();
  torch::Tensor buffer;  // rank 0's receive buffer, one block at a time
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const int owner = owners_[i];
    if (me != owner && me != 0) continue;
    const auto count = blocks[i].size() * (blocks[i].size() + 1) / 2;  // packed values
    torch::Tensor block;
    if (me == owner) {
      block = cov_.packed(local(static_cast<std::int64_t>(i)));  // flushed
      if (!block.is_cpu()) block = block.to(torch::kCPU);        // device memory: staged through the host
    } else {
      if (!buffer.defined() || buffer.numel() < count)
        buffer = torch::empty({count}, torch::TensorOptions().dtype(options_.p_dtype));
      block = buffer.narrow(0, 0, count);
    }
    if (owner != 0) {
      comm_->transfer(block.data_ptr(), static_cast<std::size_t>(block.numel()) * block.element_size(), owner,
                      0);
    }
    if (me == 0) sink(static_cast<std::int64_t>(i), block);
  }
}

void KalmanFilter::save(torch::serialize::OutputArchive& archive) {
  torch::serialize::OutputArchive state;
  write_scalars(state);
  // The archive keeps what it is given until it is written: copies, so that rank 0 ends up holding all of
  // P once more. The trainer's checkpoints use save_state + stream_covariance instead.
  stream_covariance([&](std::int64_t i, const torch::Tensor& block) {
    state.write("P_" + std::to_string(i), block.clone());
  });
  archive.write("kalman", state);
}

void KalmanFilter::load(torch::serialize::InputArchive& archive) { load(archive, nullptr); }

bool KalmanFilter::begin_journal() {
  if (comm_->size() > 1 || !device_.is_cpu()) return false;
  cov_.begin_journal();
  return true;
}

void KalmanFilter::replay(const CovarianceJournal& journal) {
  if (journal.empty()) return;
  const auto& blocks = layout_.blocks();
  if (journal.held.size() != blocks.size())
    throw OptimError("kalman optimizer state: the covariance journal covers " +
                     std::to_string(journal.held.size()) + " blocks, the model has " +
                     std::to_string(blocks.size()));
  // A change's vectors span all weights: this rank's blocks start at their layout's begin.
  std::vector<std::int64_t> begins;
  for (std::int64_t i = first_block_; i < end_block_; ++i)
    begins.push_back(blocks[static_cast<std::size_t>(i)].begin);
  cov_.replay(journal, first_block_, begins);
}

void KalmanFilter::load(torch::serialize::InputArchive& archive,
                        const std::function<torch::Tensor(std::int64_t)>& read_block) {
  torch::NoGradGuard no_grad;
  torch::serialize::InputArchive state;
  if (!archive.try_read("kalman", state))
    throw OptimError("kalman optimizer state: the archive has no 'kalman' entry");
  const auto version = read_tensor(state, "format_version").item<std::int64_t>();
  if (version != 1 && version != 2)
    throw OptimError("kalman optimizer state: format version " + std::to_string(version) +
                     " is not 1 or 2 (written by a newer deepkf?)");
  const auto sizes = read_tensor(state, "block_sizes").to(torch::kCPU);
  const auto& blocks = layout_.blocks();
  bool same = sizes.dim() == 1 && sizes.size(0) == static_cast<std::int64_t>(blocks.size());
  for (std::size_t i = 0; same && i < blocks.size(); ++i) {
    same = sizes[static_cast<std::int64_t>(i)].item<std::int64_t>() == blocks[i].size();
  }
  if (!same) {
    throw OptimError("kalman optimizer state: saved with " + std::to_string(sizes.numel()) +
                     " blocks (kf_blocksize " +
                     std::to_string(read_tensor(state, "blocksize").item<std::int64_t>()) +
                     "), this model has " + std::to_string(blocks.size()) + " blocks (kf_blocksize " +
                     std::to_string(options_.blocksize) + ") of different sizes");
  }
  const double lambda = read_tensor(state, "lambda").item<double>();
  const auto steps = read_tensor(state, "steps").item<std::int64_t>();
  for (std::int64_t i = first_block_; i < end_block_; ++i) {
    const auto key = "P_" + std::to_string(i);
    torch::Tensor block;
    if (!state.try_read(key, block)) {
      if (!read_block) throw OptimError("kalman optimizer state: entry '" + key + "' is missing");
      block = read_block(i);
    }
    // Format 2 holds packed triangles, format 1 (and format 2 checkpoint files) dense blocks.
    const auto n = blocks[static_cast<std::size_t>(i)].size();
    const bool packed = block.dim() == 1 && block.size(0) == packed::triangle_size(n);
    const bool dense = block.dim() == 2 && block.size(0) == n && block.size(1) == n;
    if (!packed && !dense) {
      throw OptimError("kalman optimizer state: " + key + " has " + std::to_string(block.numel()) +
                       " values, block " + std::to_string(i) + " is " + std::to_string(n) + " x " +
                       std::to_string(n));
    }
    cov_.assign(local(i), block);
  }
  replay(CovarianceJournal::read(archive));
  lambda_ = lambda;
  steps_ = steps;
  // The initial p0, the cap's unit; states written before the cap existed lack it, and the options' p0
  // (the trainer restores it from the checkpoint's settings) stands in.
  torch::Tensor p0;
  if (state.try_read("p0", p0)) p0_ = p0.item<double>();
}

}  // namespace deepkf
