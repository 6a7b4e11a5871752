#include "optim/KalmanFilter.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

KalmanFilter::KalmanFilter(std::vector<torch::Tensor> params, const KalmanOptions& options,
                           std::shared_ptr<Communicator> comm)
    : params_(std::move(params)), options_(options), comm_(std::move(comm)), lambda_(options.lambda0) {
  if (!comm_) throw OptimError("kalman optimizer: no communicator");
  if (!(options_.lambda0 > 0.0 && options_.lambda0 <= 1.0)) {
    throw OptimError("kalman optimizer: kalman_lambda is " + exact_number(options_.lambda0) +
                     ", must be in (0, 1]");
  }
  if (!(options_.nu > 0.0 && options_.nu <= 1.0)) {
    throw OptimError("kalman optimizer: kalman_nue is " + exact_number(options_.nu) + ", must be in (0, 1]");
  }
  if (!(options_.p0 > 0.0) || !std::isfinite(options_.p0)) {
    throw OptimError("kalman optimizer: initial covariance p0 is " + exact_number(options_.p0) +
                     ", must be positive");
  }
  if (!(options_.p_cap >= 0.0) || !std::isfinite(options_.p_cap)) {
    throw OptimError("kalman optimizer: p_cap is " + exact_number(options_.p_cap) +
                     ", must not be negative (0: no cap)");
  }
  if (!(options_.trust_radius >= 0.0) || !std::isfinite(options_.trust_radius)) {
    throw OptimError("kalman optimizer: trust_radius is " + exact_number(options_.trust_radius) +
                     ", must not be negative (0: no bound)");
  }
  p0_ = options_.p0;
  if (options_.p_dtype != torch::kFloat64 && options_.p_dtype != torch::kFloat32) {
    throw OptimError(std::string("kalman optimizer: covariance dtype ") + c10::toString(options_.p_dtype) +
                     " is not float32 or float64");
  }
  layout_ = BlockLayout::from_tensors(params_, options_.blocksize);
  device_ = params_.front().device();
  param_dtype_ = params_.front().scalar_type();
  for (std::size_t t = 0; t < params_.size(); ++t) {
    if (params_[t].device() != device_ || params_[t].scalar_type() != param_dtype_) {
      throw OptimError("kalman optimizer: parameter " + std::to_string(t) + " is " +
                       c10::toString(params_[t].scalar_type()) + " on " + params_[t].device().str() +
                       ", parameter 0 is " + c10::toString(param_dtype_) + " on " + device_.str() +
                       "; all must share one dtype and device");
    }
  }
  if (!at::isFloatingType(param_dtype_)) {
    throw OptimError(std::string("kalman optimizer: parameters are ") + c10::toString(param_dtype_) +
                     ", not floating point");
  }

  // Owners: contiguous block ranges balanced by memory (BlockLayout.hpp).
  const auto& blocks = layout_.blocks();
  const int nranks = comm_->size();
  const int me = comm_->rank();
  owners_ = deepkf::block_owners(layout_, nranks);
  rank_begin_.assign(static_cast<std::size_t>(nranks) + 1, layout_.num_parameters());
  for (std::size_t i = blocks.size(); i-- > 0;) {
    for (int r = 0; r <= owners_[i]; ++r) rank_begin_[static_cast<std::size_t>(r)] = blocks[i].begin;
  }
  first_block_ = end_block_ = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (owners_[i] < me) first_block_ = end_block_ = static_cast<std::int64_t>(i) + 1;
    if (owners_[i] == me) end_block_ = static_cast<std::int64_t>(i) + 1;
  }

  std::vector<std::int64_t> sizes;
  for (auto i = first_block_; i < end_block_; ++i)
    sizes.push_back(blocks[static_cast<std::size_t>(i)].size());
  cov_ = PackedCovariance(std::move(sizes), options_.p0, options_.p_dtype, device_);
}

void KalmanFilter::check_p0(double p0) const {
  if (steps_ > 0) {
    throw OptimError("kalman optimizer: p0 can only be set before the first step (" + std::to_string(steps_) +
                     " done)");
  }
  if (!(p0 > 0.0) || !std::isfinite(p0)) {
    throw OptimError("kalman optimizer: initial covariance p0 is " + exact_number(p0) + ", must be positive");
  }
}

void KalmanFilter::set_p0(double p0) {
  check_p0(p0);
  cov_.scale(p0 / options_.p0);  // P is p0_old I until the first step
  options_.p0 = p0;
  p0_ = p0;
}

void KalmanFilter::set_p0(double p0, const torch::Tensor& d) {
  const auto N = layout_.num_parameters();
  if (d.dim() != 1 || d.size(0) != N)
    throw OptimError("kalman optimizer: initial covariance diagonal has " + std::to_string(d.numel()) +
                     " values for " + std::to_string(N) + " parameters");
  const auto d64 = d.to(torch::kCPU, torch::kFloat64);
  if (!(d64.min().item<double>() > 0.0) || !torch::isfinite(d64).all().item<bool>())
    throw OptimError("kalman optimizer: initial covariance diagonal is not positive and finite");
  check_p0(p0);
  // P is p0_old I until the first step: P_i = S_i P_i S_i with s = sqrt(d p0 / p0_old) gives p0 diag(d_i) in
  // one pass over the blocks.
  const auto s = (d64 * (p0 / options_.p0)).sqrt();
  const auto& blocks = layout_.blocks();
  for (auto i = first_block_; i < end_block_; ++i) {
    const auto& b = blocks[static_cast<std::size_t>(i)];
    cov_.congruence(static_cast<std::size_t>(i - first_block_), s.narrow(0, b.begin, b.size()));
  }
  options_.p0 = p0;
  p0_ = p0;
}

std::int64_t KalmanFilter::covariance_bytes() const { return cov_.bytes(); }

std::int64_t KalmanFilter::total_covariance_bytes() const {
  return layout_.covariance_elements() * static_cast<std::int64_t>(c10::elementSize(options_.p_dtype));
}

std::int64_t KalmanFilter::local(std::int64_t block) const {
  if (owns(block)) return block - first_block_;
  const bool exists = block >= 0 && block < layout_.num_blocks();
  throw OptimError("kalman optimizer: block " + std::to_string(block) + " is not held by rank " +
                   std::to_string(comm_->rank()) +
                   (exists
                        ? " (rank " + std::to_string(owners_[static_cast<std::size_t>(block)]) + " holds it)"
                        : " (there are " + std::to_string(layout_.num_blocks()) + " blocks)"));
}

torch::Tensor KalmanFilter::covariance(std::int64_t block) { return cov_.dense(local(block)); }

torch::Tensor KalmanFilter::packed_covariance(std::int64_t block) {
  return cov_.packed(local(block)).to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

std::string KalmanFilter::status() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "lambda %.6f", lambda_);
  return buf;
}

void KalmanFilter::update(double e, const std::vector<torch::Tensor>& grads) {
  if (options_.trust_radius > 0.0) {  // the bound needs Y^T Y: the joint path
    update_joint({e}, {grads});
    return;
  }
  if (!std::isfinite(e))
    throw OptimError("kalman update " + std::to_string(steps_) + ": innovation e is " + exact_number(e));
  torch::NoGradGuard no_grad;
  const auto& blocks = layout_.blocks();

  // h [N] in float64 on P's device; this rank's blocks cover [own_begin, own_begin + own_count).
  auto h =
      torch::empty({layout_.num_parameters()}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  layout_.gather_into(grads, h);
  const auto own_begin = rank_begin_[static_cast<std::size_t>(comm_->rank())];
  const auto own_count = rank_begin_[static_cast<std::size_t>(comm_->rank()) + 1] - own_begin;

  // K_i = P_i h_i in one sweep that first applies the previous step's deferred update to P_i, and the
  // per-block terms h_i^T P_i h_i = h_i^T K_i in float64.
  std::vector<double> own_terms;
  const auto K = cov_.sweep(h.narrow(0, own_begin, own_count), own_terms);
  std::vector<double> terms(blocks.size(), 0.0);
  std::copy(own_terms.begin(), own_terms.end(), terms.begin() + first_block_);
  // Every rank contributes its own blocks' terms; summing in block order makes a independent of the ranks.
  comm_->allreduce_sum(terms.data(), terms.size());
  // a = sum_i (lambda + h_i^T P_i h_i)
  double a = 0.0;
  for (const double t : terms) a += lambda_ + t;
  if (!(a > 0.0) || !std::isfinite(a)) {
    throw OptimError("kalman update " + std::to_string(steps_) + ": a = sum_i (lambda + h_i^T P_i h_i) is " +
                     exact_number(a) + " (lambda " + exact_number(lambda_) +
                     "); the covariance has lost positive definiteness or h is not finite");
  }

  // w_i <- w_i + (e / a) K_i on the owned blocks, in a flat copy of the weights.
  auto w =
      torch::empty({layout_.num_parameters()}, torch::TensorOptions().dtype(param_dtype_).device(device_));
  layout_.gather_into(params_, w);
  w.narrow(0, own_begin, own_count).add_((K * (e / a)).to(param_dtype_));
  ++interval_updates_;
  interval_nis_ += e * e / a;
  if (!interval_step2_.defined()) interval_step2_ = torch::zeros({}, K.options());
  interval_step2_.add_(K.dot(K), (e / a) * (e / a));

  // P_i <- (P_i - K_i K_i^T / a) / lambda, applied by the next sweep (or a flush before P is read).
  cov_.defer_update(K, a, lambda_);
  // Directions no measurement has constrained grow by 1 / lambda every step, by e^15 over the forgetting
  // schedule's course at the defaults: bounded at p_cap p0, released to half of it (docs/rlekf.md).
  if (options_.p_cap > 0.0) interval_capped_ += cov_.cap_diagonal(options_.p_cap * p0_, 0.5);

  allgather_weights(w);
  layout_.scatter(w, params_);

  // lambda <- nu * lambda + 1 - nu
  lambda_ = options_.nu * lambda_ + 1.0 - options_.nu;
  ++steps_;
}

std::vector<double> KalmanFilter::quadratic_forms(const torch::Tensor& H) {
  torch::NoGradGuard no_grad;
  if (H.dim() != 2 || H.size(1) != layout_.num_parameters())
    throw OptimError("kalman optimizer: quadratic forms need an [m, " +
                     std::to_string(layout_.num_parameters()) + "] matrix of gradients, got " +
                     std::to_string(H.dim()) + " dimensions of " + std::to_string(H.numel()) + " values");
  const auto m = H.size(0);
  const auto own_begin = rank_begin_[static_cast<std::size_t>(comm_->rank())];
  const auto own_count = rank_begin_[static_cast<std::size_t>(comm_->rank()) + 1] - own_begin;
  // This rank's rows of H^T: [own_count, m], parameter-major as the kernel reads them.
  const auto mine = H.narrow(1, own_begin, own_count).t().to(device_, torch::kFloat64).contiguous();
  const auto own_terms = cov_.quadratic_forms(mine);  // [own blocks, m]
  // terms[i][k] = h_ik^T P_i h_ik: each block's row comes from its owner alone, so the sum is exact.
  std::vector<double> terms(static_cast<std::size_t>(layout_.num_blocks() * m), 0.0);
  std::copy(own_terms.data_ptr<double>(), own_terms.data_ptr<double>() + own_terms.numel(),
            terms.begin() + first_block_ * m);
  comm_->allreduce_sum(terms.data(), terms.size());
  // q_k = sum_i terms[i][k], in block order.
  std::vector<double> q(static_cast<std::size_t>(m), 0.0);
  for (std::int64_t i = 0; i < layout_.num_blocks(); ++i) {
    for (std::int64_t k = 0; k < m; ++k)
      q[static_cast<std::size_t>(k)] += terms[static_cast<std::size_t>(i * m + k)];
  }
  return q;
}

KalmanDiagnostics KalmanFilter::take_diagnostics() {
  // This rank's |dw|^2 and tr(P_i) over its blocks; every rank has the same updates and e^2 / a.
  std::vector<double> sums = {interval_step2_.defined() ? interval_step2_.item<double>() : 0.0,
                              cov_.diagonal_sum(), static_cast<double>(interval_capped_)};
  comm_->allreduce_sum(sums.data(), sums.size());
  KalmanDiagnostics d;
  d.updates = interval_updates_;
  if (d.updates > 0) {
    d.mean_nis = interval_nis_ / static_cast<double>(d.updates);
    d.rms_step = std::sqrt(sums[0] / static_cast<double>(d.updates));
  }
  d.mean_p_diag = sums[1] / static_cast<double>(layout_.num_parameters());
  d.capped = static_cast<std::int64_t>(sums[2]);
  d.damped = interval_damped_;
  if (d.updates > 0) d.rms_free_step = std::sqrt(interval_free2_ / static_cast<double>(d.updates));
  for (std::size_t k = 0; k < interval_share_.size(); ++k)
    d.mean_share.push_back(interval_share_count_[k] > 0
                               ? interval_share_[k] / static_cast<double>(interval_share_count_[k])
                               : 0.0);
  interval_share_.clear();
  interval_share_count_.clear();
  interval_updates_ = 0;
  interval_capped_ = 0;
  interval_damped_ = 0;
  interval_free2_ = 0.0;
  interval_nis_ = 0.0;
  interval_step2_ = torch::Tensor();
  return d;
}

void KalmanFilter::allgather_weights(torch::Tensor& flat) {
  const int nranks = comm_->size();
  if (nranks == 1) return;
  const auto elem = static_cast<std::int64_t>(flat.element_size());
  std::vector<std::size_t> counts(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const auto n = rank_begin_[static_cast<std::size_t>(r) + 1] - rank_begin_[static_cast<std::size_t>(r)];
    counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(n * elem);
  }
  const auto own_begin = rank_begin_[static_cast<std::size_t>(comm_->rank())];
  const auto own_count = rank_begin_[static_cast<std::size_t>(comm_->rank()) + 1] - own_begin;
  if (flat.is_cpu()) {
    // Straight from and into the tensor's memory: the owned slot is its own send buffer.
    auto* base = static_cast<char*>(flat.data_ptr());
    comm_->allgatherv(base + own_begin * elem, base, counts);
  } else {
    // Device memory: stage through a host buffer.
    auto host = torch::empty({flat.size(0)}, flat.options().device(torch::kCPU));
    host.narrow(0, own_begin, own_count).copy_(flat.narrow(0, own_begin, own_count));
    auto* base = static_cast<char*>(host.data_ptr());
    comm_->allgatherv(base + own_begin * elem, base, counts);
    flat.copy_(host);
  }
}

}  // namespace deepkf
