// KalmanFilter's joint measurement update (docs/rlekf.md, "Joint measurement update"): m measurements in
// one sweep of P, with the noise by share and the trust radius.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "optim/InnovationMatrix.hpp"
#include "optim/KalmanFilter.hpp"
#include "optim/SmallCholesky.hpp"
#include "optim/TrustRegion.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

void KalmanFilter::update_joint(const std::vector<double>& e,
                                const std::vector<std::vector<torch::Tensor>>& grads,
                                const std::vector<double>& shares, bool share_cap) {
  const auto m = static_cast<std::int64_t>(e.size());
  if (m < 1 || m > packed::kMaxJoint || grads.size() != e.size())
    throw OptimError("kalman joint update " + std::to_string(steps_) + ": " + std::to_string(e.size()) +
                     " innovations and " + std::to_string(grads.size()) + " gradients (1 to " +
                     std::to_string(packed::kMaxJoint) + " measurements, one gradient each)");
  if (!shares.empty() && shares.size() != e.size())
    throw OptimError("kalman joint update " + std::to_string(steps_) + ": " + std::to_string(shares.size()) +
                     " shares for " + std::to_string(e.size()) + " measurements");
  for (const double s : shares) {
    if (!(s >= 0.0 && s < 1.0))
      throw OptimError("kalman joint update " + std::to_string(steps_) + ": share " + exact_number(s) +
                       " is not in [0, 1)");
  }
  const bool by_share = std::any_of(shares.begin(), shares.end(), [](double s) { return s > 0.0; });
  const bool bounded = options_.trust_radius > 0.0;
  if (m == 1 && !by_share && !bounded) {
    update(e[0], grads[0]);
    return;
  }
  for (std::int64_t k = 0; k < m; ++k) {
    if (!std::isfinite(e[static_cast<std::size_t>(k)]))
      throw OptimError("kalman update " + std::to_string(steps_) + ": innovation e of measurement " +
                       std::to_string(k) + " is " + exact_number(e[static_cast<std::size_t>(k)]));
  }
  torch::NoGradGuard no_grad;
  const auto N = layout_.num_parameters();
  const auto own_begin = rank_begin_[static_cast<std::size_t>(comm_->rank())];
  const auto own_count = rank_begin_[static_cast<std::size_t>(comm_->rank()) + 1] - own_begin;

  // H^T [m, N] in float64 on P's device, row k the gradient of measurement k; this rank's columns of it.
  auto Ht = torch::empty({m, N}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  for (std::int64_t k = 0; k < m; ++k) {
    auto row = Ht[k];
    layout_.gather_into(grads[static_cast<std::size_t>(k)], row);
  }
  const auto own_H = Ht.narrow(1, own_begin, own_count).contiguous();

  // Y_i = P_i H_i in one sweep that applies the previous step's pending update; gram_i = H_i^T Y_i.
  torch::Tensor gram;
  const auto Yt = cov_.sweep_joint(own_H, gram);  // [m, own_count]
  const std::vector<double> A =
      joint_innovation(e, Yt, gram, by_share ? shares : std::vector<double>{}, share_cap);
  auto w = torch::empty({N}, torch::TensorOptions().dtype(param_dtype_).device(device_));
  layout_.gather_into(params_, w);
  apply_joint(A, e, Yt, w.narrow(0, own_begin, own_count));
  allgather_weights(w);
  layout_.scatter(w, params_);
  ++steps_;
}

std::vector<double> KalmanFilter::joint_innovation(const std::vector<double>& e, const torch::Tensor& Yt,
                                                   const torch::Tensor& gram,
                                                   const std::vector<double>& shares, bool share_cap) {
  const auto m = static_cast<std::int64_t>(e.size());
  const auto& blocks = layout_.blocks();
  const bool bounded = options_.trust_radius > 0.0;
  // terms: every block's H_i^T Y_i, then (with a trust radius) every block's Y_i^T Y_i; one reduction.
  const auto per_kind = static_cast<std::size_t>(layout_.num_blocks() * m * m);
  std::vector<double> terms(bounded ? 2 * per_kind : per_kind, 0.0);
  std::copy(gram.data_ptr<double>(), gram.data_ptr<double>() + gram.numel(),
            terms.begin() + first_block_ * m * m);
  if (bounded) {
    const auto y2 = cov_.block_grams(Yt, Yt);  // Y_i^T Y_i
    std::copy(y2.data_ptr<double>(), y2.data_ptr<double>() + y2.numel(),
              terms.begin() + static_cast<std::ptrdiff_t>(per_kind) + first_block_ * m * m);
  }
  comm_->allreduce_sum(terms.data(), terms.size());
  // A = sum_i (lambda I + H_i^T Y_i) in block order, symmetrised, with the noise by share.
  auto [A, q] = innovation_matrix(terms, blocks.size(), m, lambda_, shares, share_cap);
  if (bounded) {
    // G = sum_i Y_i^T Y_i in block order; A raised until |dw| <= r.
    std::vector<double> G(static_cast<std::size_t>(m * m), 0.0);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      for (std::size_t ab = 0; ab < G.size(); ++ab) G[ab] += terms[per_kind + i * G.size() + ab];
    }
    const TrustStep t = trust_step(A, G, e, m, options_.trust_radius);
    interval_free2_ += t.free * t.free;
    if (t.mu > 0.0) {
      A = damped(A, m, t.mu);
      ++interval_damped_;
    }
  }
  // Each measurement's share h_k^T P h_k / A_kk, for the diagnostics.
  if (interval_share_.size() < static_cast<std::size_t>(m)) {
    interval_share_.resize(static_cast<std::size_t>(m), 0.0);
    interval_share_count_.resize(static_cast<std::size_t>(m), 0);
  }
  for (std::int64_t k = 0; k < m; ++k) {
    const double a_kk = A[static_cast<std::size_t>(k * m + k)];
    interval_share_[static_cast<std::size_t>(k)] += q[static_cast<std::size_t>(k)] / a_kk;
    ++interval_share_count_[static_cast<std::size_t>(k)];
  }
  return A;
}

void KalmanFilter::apply_joint(const std::vector<double>& A, const std::vector<double>& e,
                               const torch::Tensor& Yt, torch::Tensor own_w) {
  const auto m = static_cast<std::int64_t>(e.size());
  const SmallCholesky chol(A, m);
  if (!chol.ok()) {
    std::string diag;
    for (std::int64_t a = 0; a < m; ++a)
      diag += (a ? ", " : "") + exact_number(A[static_cast<std::size_t>(a * m + a)]);
    throw OptimError("kalman joint update " + std::to_string(steps_) +
                     ": A = sum_i (lambda I + H_i^T P_i H_i) is not positive definite (diagonal " + diag +
                     "); the covariance has lost positive definiteness or a gradient is not finite");
  }
  // c = A^-1 e; U^T = C^-1 Y^T.
  const auto c = chol.solve(e);
  const auto Cinv = chol.lower_inverse();
  const auto options64 = torch::TensorOptions().dtype(torch::kFloat64);
  const auto c_t = torch::tensor(c, options64).to(device_);
  const auto Cinv_t = torch::from_blob(const_cast<double*>(Cinv.data()), {m, m}, options64).to(device_);
  // dw_i = Y_i A^-1 e = sum_k c_k Y_ik
  const auto dw = c_t.unsqueeze(0).mm(Yt).squeeze(0);
  own_w.add_(dw.to(param_dtype_));
  ++interval_updates_;
  double nis = 0.0;  // e^T A^-1 e
  for (std::int64_t k = 0; k < m; ++k) nis += e[static_cast<std::size_t>(k)] * c[static_cast<std::size_t>(k)];
  interval_nis_ += nis;
  if (!interval_step2_.defined()) interval_step2_ = torch::zeros({}, dw.options());
  interval_step2_.add_(dw.dot(dw));

  // lambda_eff = lambda_0 ... lambda_{m-1}: P forgets as fast as m scalar steps would make it.
  double lambda_eff = 1.0;
  for (std::int64_t k = 0; k < m; ++k) {
    lambda_eff *= lambda_;
    lambda_ = options_.nu * lambda_ + 1.0 - options_.nu;
  }
  // P_i <- (P_i - U_i U_i^T) / lambda_eff, applied by the next sweep.
  cov_.defer_joint_update(Cinv_t.mm(Yt).contiguous(), lambda_eff);
  if (options_.p_cap > 0.0) interval_capped_ += cov_.cap_diagonal(options_.p_cap * p0_, 0.5);
}

}  // namespace deepkf
