#include "optim/PackedCovariance.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <type_traits>

#include "optim/PackedPanelForms.hpp"
#include "optim/PackedQuadraticForm.hpp"
#include "optim/PackedSweep.hpp"
#include "optim/PackedTiles.hpp"
#include "optim/TaskPool.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"

namespace deepkf {

PackedCovariance::PackedCovariance(std::vector<std::int64_t> sizes, double p0, torch::ScalarType dtype,
                                   torch::Device device)
    : sizes_(std::move(sizes)), dtype_(dtype), device_(device) {
  if (dtype_ != torch::kFloat64 && dtype_ != torch::kFloat32)
    throw OptimError(std::string("packed covariance: dtype ") + c10::toString(dtype_) +
                     " is not float32 or float64");
#ifndef DEEPKF_WITH_CUDA
  if (!device_.is_cpu())
    throw OptimError("the covariance is to live on " + device_.str() +
                     ", but this deepkf was built without CUDA kernels (LibTorch without CUDA)");
#endif
  std::int64_t partial = 0;
  for (std::size_t j = 0; j < sizes_.size(); ++j) {
    const auto n = sizes_[j];
    offsets_.push_back(offsets_.back() + n);
    const auto options = torch::TensorOptions().dtype(dtype_).device(device_);
    // On the CPU the block is written first by the threads below, on huge pages where the kernel gives them.
    auto P = device_.is_cpu() ? torch::empty({packed::triangle_size(n)}, options)
                              : torch::zeros({packed::triangle_size(n)}, options);
    if (device_.is_cpu()) advise_huge_pages(P.data_ptr(), static_cast<std::int64_t>(P.nbytes()));
    std::vector<std::int64_t> diagonal(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r) diagonal[static_cast<std::size_t>(r)] = packed::row_offset(n, r);
    diagonal_at_.push_back(torch::tensor(diagonal, torch::kInt64).to(device_));
    if (!device_.is_cpu()) P.index_fill_(0, diagonal_at_.back(), p0);  // P = p0 I
    blocks_.push_back(P);
    first_task_.push_back(static_cast<std::int64_t>(tasks_.size()));
    if (device_.is_cpu()) {
      const auto rows = packed::row_chunks(n);
      for (std::size_t k = 0; k + 1 < rows.size(); ++k) {
        tasks_.push_back({static_cast<std::int64_t>(j), rows[k], rows[k + 1], partial});
        partial += n - rows[k];
      }
    }
  }
  first_task_.push_back(static_cast<std::int64_t>(tasks_.size()));
  // P = p0 I, row chunk by row chunk in the threads: the first touch of 19 GiB is a page fault per page,
  // and on one thread it took 25 s (docs/benchmarks.md, "A two-step run of DeePMD-kit's water example").
  for_each_chunk([&](auto* P, const Task& task, std::int64_t) {
    using T = std::remove_pointer_t<decltype(P)>;
    const auto n = sizes_[static_cast<std::size_t>(task.block)];
    const auto begin = packed::row_offset(n, task.r0), end = packed::row_offset(n, task.r1);
    std::fill(P + begin, P + end, T(0));
    for (auto r = task.r0; r < task.r1; ++r) P[packed::row_offset(n, r)] = static_cast<T>(p0);
  });
#ifdef DEEPKF_WITH_CUDA
  if (!device_.is_cpu() && !sizes_.empty()) partial = plan_device_tiles();
#endif
  workspace_ = torch::empty({partial}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  device_tiles_.workspace = workspace_.data_ptr<double>();
  device_ = workspace_.device();  // "cuda" names the current device: keep its index, as tensors report it
}

std::int64_t PackedCovariance::bytes() const {
  std::int64_t total = 0;
  for (const auto& b : blocks_) total += b.numel() * static_cast<std::int64_t>(b.element_size());
  return total;
}

torch::Tensor PackedCovariance::sweep(const torch::Tensor& h, std::vector<double>& terms) {
  if (h.scalar_type() != torch::kFloat64 || h.device() != device_ || h.dim() != 1 ||
      h.size(0) != offsets_.back() || !h.is_contiguous())
    throw OptimError("packed covariance: h must be a contiguous float64 vector of " +
                     std::to_string(offsets_.back()) + " values on " + device_.str());
  auto K = torch::empty({offsets_.back()}, h.options());
  terms.assign(sizes_.size(), 0.0);
  if (sizes_.empty()) return K;
  const Lock held = lock();
  if (pending_U_.defined()) flush();  // the scalar sweep applies rank-one updates only
  if (device_.is_cpu()) {
    sweep_cpu(h, K);
    if (pending_K_.defined()) count_pending_applied();
    const double* hp = h.data_ptr<double>();
    const double* kp = K.data_ptr<double>();
    // h_j^T K_j, summed in index order.
    for (std::size_t j = 0; j < sizes_.size(); ++j) {
      double s = 0.0;
      for (auto c = offsets_[j]; c < offsets_[j + 1]; ++c) s += hp[c] * kp[c];
      terms[j] = s;
    }
  } else {
#ifdef DEEPKF_WITH_CUDA
    sweep_cuda(h, K, terms);
#endif
  }
  pending_K_ = torch::Tensor();  // applied by the sweep
  return K;
}

torch::Tensor PackedCovariance::quadratic_forms(const torch::Tensor& H) {
  if (H.scalar_type() != torch::kFloat64 || H.device() != device_ || H.dim() != 2 ||
      H.size(0) != offsets_.back() || !H.is_contiguous())
    throw OptimError("packed covariance: the vectors must be a contiguous float64 [" +
                     std::to_string(offsets_.back()) + ", m] matrix on " + device_.str());
  const auto m = H.size(1);
  if (sizes_.empty() || m == 0) return torch::zeros({num_blocks(), m}, torch::kFloat64);
  const Lock held = lock();
  flush();
  if (!device_.is_cpu()) {
    // Each block in dense row panels, one matrix product per panel for all m vectors (PackedPanelForms.hpp);
    // the rows of all blocks are copied to the host once.
    std::vector<torch::Tensor> rows;
    for (std::size_t j = 0; j < sizes_.size(); ++j) {
      rows.push_back(
          packed::quadratic_forms_by_panels(blocks_[j], sizes_[j], H.narrow(0, offsets_[j], sizes_[j])));
    }
    return torch::stack(rows).to(torch::kCPU);
  }
  auto terms = torch::zeros({num_blocks(), m}, torch::kFloat64);
  double* out = terms.data_ptr<double>();
  // Each task (a chunk of rows of one block) adds into its own m partial sums.
  auto partial = torch::zeros({static_cast<std::int64_t>(tasks_.size()), m}, torch::kFloat64);
  double* part = partial.data_ptr<double>();
  const double* hp = H.data_ptr<double>();
  for_each_chunk([&](auto* P, const Task& task, std::int64_t t) {
    const auto j = static_cast<std::size_t>(task.block);
    packed::quadratic_form_rows(P, sizes_[j], task.r0, task.r1, hp + offsets_[j] * m, m, part + t * m);
  });
  // terms[j] = the sum of block j's partial sums, in chunk order.
  for (std::size_t j = 0; j < sizes_.size(); ++j) {
    for (auto t = first_task_[j]; t < first_task_[j + 1]; ++t) {
      for (std::int64_t k = 0; k < m; ++k) out[static_cast<std::int64_t>(j) * m + k] += part[t * m + k];
    }
  }
  return terms;
}

void PackedCovariance::sweep_cpu(const torch::Tensor& h, torch::Tensor& K) {
  diagonal_swept_.clear();
  const double* hp = h.data_ptr<double>();
  double* ws = workspace_.data_ptr<double>();
  const double* pending = pending_K_.defined() ? pending_K_.data_ptr<double>() : nullptr;
  for_each_chunk([&](auto* P, const Task& task, std::int64_t) {
    const auto j = static_cast<std::size_t>(task.block);
    const auto n = sizes_[j];
    packed::RankOneUpdate update;
    if (pending) update = {pending + offsets_[j], pending_inv_a_, pending_inv_lambda_};
    double* y = ws + task.partial;
    std::fill(y, y + (n - task.r0), 0.0);
    packed::sweep_rows(P, n, task.r0, task.r1, update, hp + offsets_[j], y);
  });
  // K_j = the sum of block j's partial vectors, in chunk order.
  double* kp = K.data_ptr<double>();
  for_each_task(num_blocks(), [&](std::int64_t j) {
    const auto n = sizes_[static_cast<std::size_t>(j)];
    double* k = kp + offsets_[static_cast<std::size_t>(j)];
    std::fill(k, k + n, 0.0);
    for (auto t = first_task_[static_cast<std::size_t>(j)]; t < first_task_[static_cast<std::size_t>(j) + 1];
         ++t) {
      const Task& task = tasks_[static_cast<std::size_t>(t)];
      const double* y = ws + task.partial;
      for (auto c = task.r0; c < n; ++c) k[c] += y[c - task.r0];
    }
  });
}

void PackedCovariance::defer_update(torch::Tensor K, double a, double lambda) {
  const Lock held = lock();
  if (has_pending()) flush();
  pending_K_ = std::move(K);
  pending_inv_a_ = 1.0 / a;
  pending_inv_lambda_ = 1.0 / lambda;
  if (journal_) {
    CovarianceChange change;
    change.kind = CovarianceChange::Kind::kRankOne;
    change.values = pending_K_.to(torch::kCPU, torch::kFloat64, false, /*copy=*/true);
    change.inv_a = pending_inv_a_;
    change.inv_lambda = pending_inv_lambda_;
    record(std::move(change));
  }
}

void PackedCovariance::scale(double factor) {
  const Lock held = lock();
  if (has_pending()) flush();
  diagonal_swept_.clear();
  for (auto& P : blocks_) P.mul_(factor);
  if (journal_) {
    CovarianceChange change;
    change.kind = CovarianceChange::Kind::kScale;
    change.factor = factor;
    record(std::move(change));
    for (auto& n : journal_->held) ++n;
  }
}

void PackedCovariance::flush() {
  if (!has_pending()) return;
  const Lock held = lock();
  if (device_.is_cpu()) {
    flush_cpu();
    count_pending_applied();
  } else {
#ifdef DEEPKF_WITH_CUDA
    if (pending_U_.defined()) {
      flush_joint_cuda();
    } else {
      flush_cuda();
    }
#endif
  }
  pending_K_ = torch::Tensor();
  pending_U_ = torch::Tensor();
  applied_.clear();
}

void PackedCovariance::flush_block(std::size_t j) {
  if (!device_.is_cpu() || !pending_U_.defined()) {
    flush();
    return;
  }
  if (applied(j)) return;
  forget_swept_diagonal(j);
  // The same instructions as flush_cpu's on this block's row chunks: the block ends as a full flush leaves
  // it.
  packed::RankUpdate update = pending_joint();
  update.U += offsets_[j];
  for_each_chunk_of(j, [&](auto* P, const Task& task, std::int64_t) {
    packed::joint_update_rows(P, sizes_[j], task.r0, task.r1, update);
  });
  if (applied_.empty()) applied_.assign(sizes_.size(), 0);
  applied_[j] = 1;
  if (journal_) ++journal_->held[j];
}

void PackedCovariance::flush_cpu() {
  diagonal_swept_.clear();
  if (pending_U_.defined()) {
    const packed::RankUpdate pending = pending_joint();
    for_each_chunk([&](auto* P, const Task& task, std::int64_t) {
      const auto j = static_cast<std::size_t>(task.block);
      if (applied(j)) return;  // flushed alone already (flush_block)
      packed::RankUpdate update = pending;
      update.U += offsets_[j];
      packed::joint_update_rows(P, sizes_[j], task.r0, task.r1, update);
    });
    return;
  }
  const double* pending = pending_K_.data_ptr<double>();
  for_each_chunk([&](auto* P, const Task& task, std::int64_t) {
    const auto j = static_cast<std::size_t>(task.block);
    const packed::RankOneUpdate update{pending + offsets_[j], pending_inv_a_, pending_inv_lambda_};
    packed::update_rows(P, sizes_[j], task.r0, task.r1, update);
  });
}

const torch::Tensor& PackedCovariance::packed(std::int64_t j) {
  const Lock held = lock();
  flush();
  return blocks_.at(static_cast<std::size_t>(j));
}

torch::Tensor PackedCovariance::dense(std::int64_t j) {
  const auto p = packed(j).to(torch::kCPU).contiguous();
  const auto n = size(j);
  auto out = torch::empty({n, n}, torch::TensorOptions().dtype(dtype_));
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    packed::unpack<T>(p.data_ptr<T>(), n, out.data_ptr<T>());
  });
  return out;
}

void PackedCovariance::assign(std::int64_t j, const torch::Tensor& block) {
  const Lock held = lock();
  if (journal_) throw OptimError("packed covariance: a block is assigned while a journal is kept");
  flush();
  forget_swept_diagonal(static_cast<std::size_t>(j));
  const auto n = size(j);
  auto& target = blocks_.at(static_cast<std::size_t>(j));
  if (block.dim() == 1 && block.size(0) == packed::triangle_size(n)) {
    target.copy_(block);
  } else if (block.dim() == 2 && block.size(0) == n && block.size(1) == n) {
    const auto dense = block.to(torch::kCPU, dtype_).contiguous();
    auto p = torch::empty({packed::triangle_size(n)}, dense.options());
    with_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      packed::pack<T>(dense.data_ptr<T>(), n, p.data_ptr<T>());
    });
    target.copy_(p);
  } else {
    throw OptimError("covariance block " + std::to_string(j) + " of size " + std::to_string(n) +
                     " given as " + std::to_string(block.numel()) + " values (expected " +
                     std::to_string(packed::triangle_size(n)) + " packed or " + std::to_string(n * n) +
                     " dense)");
  }
}

}  // namespace deepkf
