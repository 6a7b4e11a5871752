// PackedCovariance's diagonal: its sum and largest values with the pending update included, and the cap
// that keeps it bounded by congruences of single blocks (docs/rlekf.md, "Bounded covariance").
#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "optim/PackedCovariance.hpp"
#include "optim/PackedSweep.hpp"

namespace deepkf {

torch::Tensor PackedCovariance::diagonal(std::size_t j) const {
  auto diag = blocks_[j].index_select(0, diagonal_at_[j]).to(torch::kFloat64);
  if (pending_K_.defined()) {
    // (p_rr - K_r^2 / a) / lambda
    const auto K = pending_K_.narrow(0, offsets_[j], sizes_[j]);
    diag = (diag - K * K * pending_inv_a_) * pending_inv_lambda_;
  } else if (pending_U_.defined() && !applied(j)) {
    // (p_rr - sum_k U_rk^2) / lambda, the terms subtracted one at a time in k order (a reduction over k
    // would round by the tensor's layout, which differs with the blocks a rank holds)
    for (std::int64_t k = 0; k < pending_U_.size(0); ++k) {
      const auto u = pending_U_[k].narrow(0, offsets_[j], sizes_[j]);
      diag = diag - u * u;
    }
    diag = diag * pending_inv_lambda_;
  }
  return diag;
}

double PackedCovariance::diagonal_sum() const {
  if (!device_.is_cpu()) {
    double total = 0.0;
#ifdef DEEPKF_WITH_CUDA
    const auto stats = diagonal_stats_cuda();
    const double* sums = stats[1].data_ptr<double>();
    for (std::int64_t j = 0; j < num_blocks(); ++j) total += sums[j];  // in block order
#endif
    return total;
  }
  auto total = torch::zeros({}, torch::kFloat64);
  for (std::size_t j = 0; j < sizes_.size(); ++j) total += diagonal(j).sum();
  return total.item<double>();
}

std::vector<double> PackedCovariance::largest_diagonals() const {
  std::vector<double> out(sizes_.size());
  if (!device_.is_cpu()) {
#ifdef DEEPKF_WITH_CUDA
    const auto stats = diagonal_stats_cuda();
    std::copy(stats[0].data_ptr<double>(), stats[0].data_ptr<double>() + num_blocks(), out.begin());
#endif
    return out;
  }
  // On the CPU a plain loop: the same values as diagonal(j), without a tensor per block and update. The
  // stored p_rr come from the last joint sweep where it left them (the same values, read contiguously).
  const double* K = pending_K_.defined() ? pending_K_.data_ptr<double>() : nullptr;
  const packed::RankUpdate joint = pending_joint();
  with_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t j = 0; j < sizes_.size(); ++j) {
      const T* P = blocks_[j].data_ptr<T>();
      const std::int64_t* at = diagonal_at_[j].data_ptr<std::int64_t>();
      const double* swept = diagonal_swept(j) ? swept_diagonal_.data() + offsets_[j] : nullptr;
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t r = 0; r < sizes_[j]; ++r) {
        double p = swept != nullptr ? swept[r] : static_cast<double>(P[at[r]]);
        if (K != nullptr) {
          const double k = K[offsets_[j] + r];
          p = (p - k * k * pending_inv_a_) * pending_inv_lambda_;
        } else if (joint.q > 0 && !applied(j)) {
          for (int q = 0; q < joint.q; ++q) {
            const double u = joint.U[q * joint.ld + offsets_[j] + r];
            p -= u * u;
          }
          p *= pending_inv_lambda_;
        }
        m = std::max(m, p);
      }
      out[j] = m;
    }
  });
  return out;
}

std::int64_t PackedCovariance::cap_diagonal(double cap, double release) {
  if (sizes_.empty()) return 0;
  const Lock held = lock();
  const std::vector<double> largest = largest_diagonals();
  const double target = cap * release;
  std::int64_t scaled = 0;
  for (std::size_t j = 0; j < sizes_.size(); ++j) {
    if (!(largest[j] > cap)) continue;
    const auto d = diagonal(j);
    const auto above = d > target;
    scaled += above.sum().item<std::int64_t>();
    congruence(j, torch::where(above, (target / d).sqrt(), torch::ones_like(d)));
  }
  return scaled;
}

void PackedCovariance::congruence(std::size_t j, const torch::Tensor& s_in) {
  const Lock held = lock();
  flush_block(j);  // this block only: the others keep their update for the next sweep
  forget_swept_diagonal(j);
  const auto s = s_in.to(device_, torch::kFloat64).contiguous();
  if (!device_.is_cpu()) {
#ifdef DEEPKF_WITH_CUDA
    scale_cuda(j, s);
#endif
    return;
  }
  for_each_chunk_of(j, [&](auto* P, const Task& task, std::int64_t) {
    packed::scale_rows(P, sizes_[j], task.r0, task.r1, s.data_ptr<double>());
  });
  if (journal_) {
    CovarianceChange change;
    change.kind = CovarianceChange::Kind::kCongruence;
    change.block = static_cast<std::int64_t>(j);
    change.values = s.clone();
    record(std::move(change));
    ++journal_->held[j];
  }
}

}  // namespace deepkf
