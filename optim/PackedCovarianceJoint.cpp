// PackedCovariance's joint sweep (docs/rlekf.md, "Joint measurement update"): Y = P H for m vectors in the
// sweep that applies the pending rank-m update, the blocks' Gram matrices H_j^T Y_j, and the rank-m update
// left pending. The CPU kernel is optim/PackedJointSweep.hpp; the device's is in PackedCovarianceCuda.cpp.
#include <torch/torch.h>

#include <algorithm>

#include "optim/BlockGrams.hpp"
#include "optim/PackedCovariance.hpp"
#include "optim/PackedJointSweep.hpp"
#include "optim/TaskPool.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

torch::Tensor PackedCovariance::sweep_joint(const torch::Tensor& H, torch::Tensor& gram) {
  if (H.scalar_type() != torch::kFloat64 || H.device() != device_ || H.dim() != 2 ||
      H.size(1) != offsets_.back() || H.size(0) < 1 || H.size(0) > packed::kMaxJoint || !H.is_contiguous())
    throw OptimError("packed covariance: the joint sweep needs a contiguous float64 [m, " +
                     std::to_string(offsets_.back()) + "] matrix on " + device_.str() + ", m from 1 to " +
                     std::to_string(packed::kMaxJoint));
  const auto m = H.size(0);
  auto Y = torch::empty_like(H);
  if (sizes_.empty()) {
    gram = torch::zeros({0, m, m}, torch::kFloat64);
    return Y;
  }
  const Lock held = lock();
  // The kernels apply a pending update of rank m only.
  if (pending_K_.defined() || (pending_U_.defined() && pending_U_.size(0) != m)) flush();
  if (!device_.is_cpu()) {
#ifdef DEEPKF_WITH_CUDA
    auto device_gram = torch::empty({num_blocks(), m, m}, H.options());
    sweep_joint_cuda(H, Y, device_gram);
    gram = device_gram.to(torch::kCPU);
#endif
    pending_U_ = torch::Tensor();
    return Y;
  }
  sweep_joint_cpu(H, Y);
  if (pending_U_.defined()) count_pending_applied();
  pending_U_ = torch::Tensor();  // applied by the sweep
  applied_.clear();
  gram = block_grams(H, Y);  // H_j^T Y_j
  return Y;
}

torch::Tensor PackedCovariance::block_grams(const torch::Tensor& X, const torch::Tensor& Z) const {
  return X.is_cpu() ? block_grams_cpu(X, Z, sizes_) : block_grams_batched(X, Z, sizes_);
}

packed::RankUpdate PackedCovariance::pending_joint() const {
  if (!pending_U_.defined()) return {};
  return {pending_U_.data_ptr<double>(), offsets_.back(), static_cast<int>(pending_U_.size(0)),
          pending_inv_lambda_};
}

void PackedCovariance::sweep_joint_cpu(const torch::Tensor& H, torch::Tensor& Y) {
  const auto m = H.size(0);
  const auto total = offsets_.back();
  const auto partial = workspace_.size(0);  // one task's vector of n_j - r0 values, per vector
  if (!joint_workspace_.defined() || joint_workspace_.size(0) < m * partial)
    joint_workspace_ = torch::empty({m * partial}, torch::kFloat64);
  double* ws = joint_workspace_.data_ptr<double>();
  const double* hp = H.data_ptr<double>();
  swept_diagonal_.resize(static_cast<std::size_t>(total));
  double* diagonal = swept_diagonal_.data();
  // With no update pending, and on blocks a congruence has flushed alone (flush_block: their update is in
  // P), the kernel takes U = 0, lambda = 1 (PackedJointSweep.hpp: the same instructions).
  torch::Tensor zeros;
  packed::RankUpdate none;
  packed::RankUpdate pending = pending_joint();
  if (pending.q == 0 || !applied_.empty()) {
    zeros = torch::zeros({m, total}, torch::kFloat64);
    none = {zeros.data_ptr<double>(), total, static_cast<int>(m), 1.0};
    if (pending.q == 0) pending = none;
  }
  for_each_chunk([&](auto* P, const Task& task, std::int64_t) {
    const auto j = static_cast<std::size_t>(task.block);
    const auto n = sizes_[j];
    const auto len = n - task.r0;
    // This task's m partial vectors lie one after another at m * task.partial.
    double* y = ws + m * task.partial;
    std::fill(y, y + m * len, 0.0);
    packed::RankUpdate update = applied(j) ? none : pending;
    update.U += offsets_[j];
    packed::joint_sweep_rows(P, n, task.r0, task.r1, update, {hp + offsets_[j], total}, static_cast<int>(m),
                             {y, len}, diagonal + offsets_[j]);
  });
  diagonal_swept_.assign(sizes_.size(), 1);
  // Y_j = the sum of block j's partial vectors, in chunk order.
  double* out = Y.data_ptr<double>();
  for_each_task(num_blocks(), [&](std::int64_t j) {
    const auto js = static_cast<std::size_t>(j);
    const auto n = sizes_[js];
    for (std::int64_t k = 0; k < m; ++k)
      std::fill(out + k * total + offsets_[js], out + k * total + offsets_[js] + n, 0.0);
    for (auto t = first_task_[js]; t < first_task_[js + 1]; ++t) {
      const Task& task = tasks_[static_cast<std::size_t>(t)];
      const auto len = n - task.r0;
      for (std::int64_t k = 0; k < m; ++k) {
        const double* y = ws + m * task.partial + k * len;
        double* o = out + k * total + offsets_[js];
        for (auto c = task.r0; c < n; ++c) o[c] += y[c - task.r0];
      }
    }
  });
}

void PackedCovariance::defer_joint_update(torch::Tensor U, double lambda) {
  if (U.scalar_type() != torch::kFloat64 || U.device() != device_ || U.dim() != 2 ||
      U.size(1) != offsets_.back() || U.size(0) < 1 || U.size(0) > packed::kMaxJoint || !U.is_contiguous())
    throw OptimError("packed covariance: a joint update needs a contiguous float64 [q, " +
                     std::to_string(offsets_.back()) + "] matrix on " + device_.str());
  const Lock held = lock();
  if (has_pending()) flush();
  pending_U_ = std::move(U);
  applied_.clear();
  pending_inv_lambda_ = 1.0 / lambda;
  if (journal_) {
    CovarianceChange change;
    change.kind = CovarianceChange::Kind::kJoint;
    change.values = pending_U_.to(torch::kCPU, torch::kFloat64, false, /*copy=*/true);
    change.inv_lambda = pending_inv_lambda_;
    record(std::move(change));
  }
}

}  // namespace deepkf
