#pragma once
// The dense formulation of RLEKF for the optimizer tests: P as an N x N matrix that is zero outside the
// diagonal blocks, updated out of place after every step, as docs/rlekf.md defines it.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "tests/optim/OptimTestSupport.hpp"

namespace deepkf::test {

struct DenseFilter {
  torch::Tensor P, mask, w;
  double lambda;
  double nblocks;
  deepkf::KalmanOptions options;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;  // [begin, size) of each block

  DenseFilter(const deepkf::KalmanFilter& kf, const std::vector<torch::Tensor>& params)
      : options(kf.options()) {
    const auto n = kf.layout().num_parameters();
    P = torch::zeros({n, n}, torch::kFloat64);
    mask = torch::zeros({n, n}, torch::kFloat64);
    for (const auto& b : kf.layout().blocks()) {
      mask.narrow(0, b.begin, b.size()).narrow(1, b.begin, b.size()).fill_(1.0);
      ranges.emplace_back(b.begin, b.size());
    }
    P.diagonal().fill_(options.p0);
    w = flatten_by_definition(params);
    lambda = options.lambda0;
    nblocks = static_cast<double>(kf.layout().num_blocks());
  }

  void update(double e, const std::vector<torch::Tensor>& grads) {
    const auto h = flatten_by_definition(grads);
    // a = sum_i (lambda + h_i^T P_i h_i) = L lambda + h^T P h for block-diagonal P
    const auto K = P.mv(h);
    const double a = nblocks * lambda + h.dot(K).item<double>();
    // w += (e / a) K ; P = (P - mask * K K^T / a) / lambda
    w = w + (e / a) * K;
    P = (P - mask * torch::outer(K, K) / a) / lambda;
    lambda = options.nu * lambda + 1.0 - options.nu;
    if (options.p_cap > 0.0) cap(options.p_cap * options.p0, 0.5);
    ++updates;
    nis_sum += e * e / a;
    step2_sum += (e / a) * (e / a) * K.dot(K).item<double>();
  }

  // The joint update of docs/rlekf.md written out densely: Y = P H, A = L lambda I + H^T Y,
  // w += Y A^-1 e, P = (P - mask * Y A^-1 Y^T) / (lambda_0 ... lambda_{m-1}).
  // shares: where shares[k] > 0, measurement k's noise is q_k (1 / s_k - 1), q_k = h_k^T P h_k, in place of
  // L lambda (docs/rlekf.md, "Noise by share").
  // radius > 0 (docs/rlekf.md, "Trust radius"): where |Y A^-1 e| > radius, A's diagonal is raised by the
  // factor 1 + mu, mu found here by bisection on |dw(mu)| with dense inverses, until |dw| = radius.
  void update_joint(const std::vector<double>& e, const std::vector<std::vector<torch::Tensor>>& grads,
                    const std::vector<double>& shares = {}, double radius = 0.0) {
    const auto m = static_cast<std::int64_t>(e.size());
    std::vector<torch::Tensor> columns;
    for (const auto& g : grads) columns.push_back(flatten_by_definition(g));
    const auto H = torch::stack(columns, 1);  // [N, m]
    const auto Y = P.mm(H);
    const auto HtPH = H.t().mm(Y);
    auto noise = torch::full({m}, nblocks * lambda, torch::kFloat64);
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(shares.size()); ++k) {
      const double s = shares[static_cast<std::size_t>(k)];
      if (s > 0.0) noise[k] = HtPH[k][k].item<double>() * (1.0 / s - 1.0);
    }
    auto A = torch::diag(noise) + HtPH;
    const auto ev = torch::tensor(e, torch::kFloat64);
    const auto length = [&](double mu) {
      const auto Amu = A + mu * torch::diag(A.diagonal());
      return Y.mv(torch::inverse(Amu).mv(ev)).norm().item<double>();
    };
    if (radius > 0.0 && length(0.0) > radius) {
      double lo = 0.0, hi = 1.0;
      while (length(hi) > radius) hi *= 2.0;
      for (int it = 0; it < 100; ++it) {
        const double mid = 0.5 * (lo + hi);
        (length(mid) > radius ? lo : hi) = mid;
      }
      A = A + hi * torch::diag(A.diagonal());
    }
    const auto Ainv = torch::inverse(A);
    w = w + Y.mv(Ainv.mv(ev));
    double lambda_eff = 1.0;
    for (std::int64_t k = 0; k < m; ++k) {
      lambda_eff *= lambda;
      lambda = options.nu * lambda + 1.0 - options.nu;
    }
    P = (P - mask * Y.mm(Ainv).mm(Y.t())) / lambda_eff;
    if (options.p_cap > 0.0) cap(options.p_cap * options.p0, 0.5);
    ++updates;
    nis_sum += ev.dot(Ainv.mv(ev)).item<double>();
    const auto dw = Y.mv(Ainv.mv(ev));
    step2_sum += dw.dot(dw).item<double>();
  }

  // The bound on P's diagonal, block by block as docs/rlekf.md states it: a block with a diagonal value above
  // cap gets P_i <- S P_i S, s_r = sqrt(cap release / p_rr) where p_rr > cap release, 1 elsewhere.
  void cap(double cap, double release) {
    for (const auto& [begin, size] : ranges) {
      auto Pi = P.narrow(0, begin, size).narrow(1, begin, size);
      const auto d = Pi.diagonal().clone();
      if (!(d.max().item<double>() > cap)) continue;
      const double target = cap * release;
      const auto s = torch::where(d > target, (target / d).sqrt(), torch::ones_like(d));
      Pi.copy_(Pi * torch::outer(s, s));
      capped += (d > target).sum().item<std::int64_t>();
    }
  }

  // Block i of P, in the block order of the filter's layout.
  torch::Tensor block(std::size_t i) const {
    const auto [begin, size] = ranges[i];
    return P.narrow(0, begin, size).narrow(1, begin, size);
  }

  // Sums since the last diagnostics, as KalmanDiagnostics defines them.
  std::int64_t updates = 0, capped = 0;
  double nis_sum = 0.0, step2_sum = 0.0;
  deepkf::KalmanDiagnostics take_diagnostics() {
    deepkf::KalmanDiagnostics d;
    d.updates = updates;
    d.mean_nis = nis_sum / static_cast<double>(updates);
    d.rms_step = std::sqrt(step2_sum / static_cast<double>(updates));
    d.mean_p_diag = P.trace().item<double>() / static_cast<double>(P.size(0));
    d.capped = capped;
    updates = 0;
    capped = 0;
    nis_sum = step2_sum = 0.0;
    return d;
  }
};

}  // namespace deepkf::test
