// The bound on the covariance's diagonal (docs/rlekf.md, "Bounded covariance"): the packed scaling against
// dense algebra, the filter with p_cap against the dense filter, and the cap's unit surviving a restore.
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "optim/PackedCovariance.hpp"
#include "tests/optim/DenseFilter.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/optim/ToyPotential.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using deepkf::KalmanFilter;
using deepkf::KalmanOptions;
using deepkf::PackedCovariance;
using namespace deepkf::test;

namespace {

// A symmetric positive-definite n x n matrix whose diagonal spans a factor e^4 (float64).
torch::Tensor spread_spd(std::int64_t n, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto A = at::randn({n, n}, gen, torch::kFloat64) / std::sqrt(static_cast<double>(n));
  const auto d = torch::exp(torch::linspace(-2.0, 2.0, n, torch::kFloat64)).sqrt();
  return torch::outer(d, d) * (A.mm(A.t()) + torch::eye(n, torch::kFloat64));
}

// The definition: P_i <- S P_i S with s_r = sqrt(cap release / p_rr) where p_rr > cap release, when some
// p_rr > cap; otherwise P_i unchanged.
torch::Tensor capped_by_definition(const torch::Tensor& P, double cap, double release) {
  const auto d = P.diagonal();
  if (!(d.max().item<double>() > cap)) return P;
  const auto s = torch::where(d > cap * release, (cap * release / d).sqrt(), torch::ones_like(d));
  return P * torch::outer(s, s);
}

// Sets block j of `cov` to spread_spd(n_j, seed + j) passed through shape(j, P), block 0 then brought to a
// largest diagonal value of 2.5 (under the tests' cap of 3); returns the blocks as stored (rounded to the
// covariance's dtype), in float64.
template <typename F>
std::vector<torch::Tensor> assign_spread(PackedCovariance& cov, const std::vector<std::int64_t>& sizes,
                                         std::uint64_t seed, const F& shape) {
  std::vector<torch::Tensor> stored;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    auto P = shape(j, spread_spd(sizes[j], seed + j));
    if (j == 0) P = P / P.diagonal().max() * 2.5;
    cov.assign(static_cast<std::int64_t>(j), P);
    stored.push_back(cov.dense(static_cast<std::int64_t>(j)).to(torch::kFloat64));
  }
  return stored;
}

}  // namespace

TEST_CASE("capping the diagonal scales P to S P S as defined, with the pending update applied first",
          "[optim][packed][cap]") {
  // Blocks of 40 (diagonal below the cap: left alone) and 700 (several row chunks; its diagonal reaches
  // 7.4 p0, above the cap).
  const std::vector<std::int64_t> sizes = {40, 700};
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const bool f64 = dtype == torch::kFloat64;
    INFO("dtype " << c10::toString(dtype));
    PackedCovariance cov(sizes, 1.0, dtype, torch::kCPU);
    const auto dense = assign_spread(cov, sizes, 3, [](std::size_t, const torch::Tensor& P) { return P; });
    // A Kalman step's update left pending: K = P h, a = 2 lambda + h^T P h.
    const double lambda = 0.97;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
    const auto h = at::randn({740}, gen, torch::kFloat64) * 0.1;
    std::vector<double> terms;
    const auto K = cov.sweep(h, terms);
    const double a = 2.0 * lambda + terms[0] + terms[1];
    cov.defer_update(K, a, lambda);

    const double cap = 3.0, release = 0.5;
    std::int64_t want_count = 0;
    std::vector<torch::Tensor> want;
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      const auto Kj = K.narrow(0, j == 0 ? 0 : 40, sizes[j]);
      const auto updated = (dense[j] - torch::outer(Kj, Kj) / a) / lambda;
      want.push_back(capped_by_definition(updated, cap, release));
      if (updated.diagonal().max().item<double>() > cap)
        want_count += (updated.diagonal() > cap * release).sum().item<std::int64_t>();
    }
    REQUIRE(want_count > 100);  // the large block is scaled, over many of its rows

    CHECK(cov.cap_diagonal(cap, release) == want_count);
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      INFO("block " << j);
      const auto got = cov.dense(static_cast<std::int64_t>(j)).to(torch::kFloat64);
      CHECK(relative_difference(got, want[j]) < (f64 ? 1e-13 : 1e-6));
      CHECK(got.diagonal().max().item<double>() <= cap * (f64 ? 1.0 : 1.0 + 1e-6));
      // A congruence keeps P positive definite.
      CHECK(torch::linalg_eigvalsh(got, "L").min().item<double>() > 0.0);
    }
    CHECK(relative_difference(cov.dense(0).to(torch::kFloat64), want[0]) < (f64 ? 1e-15 : 1e-7));
    // Under the cap now: a second call scales nothing.
    CHECK(cov.cap_diagonal(cap, release) == 0);
  }
}

TEST_CASE("capping after a joint sweep reads the diagonal the sweep stored and equals the definition",
          "[optim][packed][cap][joint]") {
  // As above with a joint step's rank-3 update pending: the cap then takes each block's stored diagonal from
  // the sweep instead of from P. Blocks of 40 (under the cap), 700 (only its last row above the cap at the
  // first step: a diagonal read from the wrong rows misses it) and 1100 (several row chunks; float32 rows of
  // at most 1,024 values one at a time, longer ones four at a time).
  const std::vector<std::int64_t> sizes = {40, 700, 1100};
  std::vector<std::int64_t> offsets = {0};
  for (const auto n : sizes) offsets.push_back(offsets.back() + n);
  const std::int64_t total = offsets.back(), m = 3;
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const bool f64 = dtype == torch::kFloat64;
    INFO("dtype " << c10::toString(dtype));
    PackedCovariance cov(sizes, 1.0, dtype, torch::kCPU);
    auto dense = assign_spread(cov, sizes, 5, [](std::size_t j, torch::Tensor P) {
      if (j != 1) return P;
      const auto last = P.size(0) - 1;
      P[last][last] = P.diagonal().max() * 1.5;  // raising a diagonal value keeps P positive definite
      return P / P[last][last] * 3.3;
    });
    const double lambda = 0.97;
    for (int step = 0; step < 2; ++step) {
      INFO("joint step " << step);
      // Y = P H, A = 3 lambda I + H^T Y = C C^T, U = Y C^-T; P <- (P - U U^T) / lambda left pending.
      auto gen = at::make_generator<at::CPUGeneratorImpl>(21 + step);
      const auto H = at::randn({m, total}, gen, torch::kFloat64) * 0.1;
      torch::Tensor gram;
      const auto Y = cov.sweep_joint(H, gram);
      const auto A = 3.0 * lambda * torch::eye(m, torch::kFloat64) + gram.sum(0);
      const auto C = torch::linalg_cholesky(A);
      const auto U = torch::linalg_solve_triangular(C, Y, /*upper=*/false).contiguous();
      cov.defer_joint_update(U, lambda);

      const double cap = 3.0, release = 0.5;
      std::int64_t want_count = 0;
      std::vector<torch::Tensor> want;
      for (std::size_t j = 0; j < sizes.size(); ++j) {
        const auto Uj = U.narrow(1, offsets[j], sizes[j]);
        const auto updated = (dense[j] - Uj.t().mm(Uj)) / lambda;
        if (step == 0 && j == 1) {
          const auto top = std::get<0>(updated.diagonal().topk(2));
          REQUIRE(top[0].item<double>() == updated.diagonal()[sizes[j] - 1].item<double>());
          REQUIRE(top[0].item<double>() > cap);
          REQUIRE(top[1].item<double>() < cap);
        }
        want.push_back(capped_by_definition(updated, cap, release));
        if (updated.diagonal().max().item<double>() > cap)
          want_count += (updated.diagonal() > cap * release).sum().item<std::int64_t>();
      }
      REQUIRE(want_count > 100);  // the large blocks are scaled, over many of their rows

      CHECK(cov.cap_diagonal(cap, release) == want_count);
      // Under the cap now, the update still pending on the block left alone: a second call scales nothing
      // (the scaled blocks' stored diagonals are no longer the swept ones).
      CHECK(cov.cap_diagonal(cap, release) == 0);
      for (std::size_t j = 0; j < sizes.size(); ++j) {
        INFO("block " << j);
        const auto got = cov.dense(static_cast<std::int64_t>(j)).to(torch::kFloat64);
        CHECK(relative_difference(got, want[j]) < (f64 ? 1e-13 : 1e-6));
        CHECK(got.diagonal().max().item<double>() <= cap * (f64 ? 1.0 : 1.0 + 1e-6));
        dense[j] = got;
      }
      // Grown again for the next step, as forgetting grows it.
      cov.scale(2.0);
      for (auto& d : dense) d = d * 2.0;
    }
  }
}

TEST_CASE("RLEKF with p_cap equals the dense filter with the cap, and its diagonal stays under p_cap p0",
          "[optim][kalman][cap]") {
  // The toy potential trained as in the dense-algebra test, with a fast forgetting schedule (lambda from
  // 0.9) so that directions the measurements do not constrain reach the cap within the run.
  const auto [positions, labels] = teacher_data();
  for (const std::int64_t blocksize : {20, 105}) {
    for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
      const bool f64 = p_dtype == torch::kFloat64;
      INFO("kf_blocksize " << blocksize << ", covariance " << c10::toString(p_dtype));
      ToyPotential student(7);
      KalmanOptions options;
      options.blocksize = blocksize;
      options.p_dtype = p_dtype;
      options.p0 = 2.0;
      options.lambda0 = 0.9;
      options.nu = 0.99;
      options.p_cap = 3.0;
      KalmanFilter kf(student.params, options);
      DenseFilter dense(kf, student.params);
      std::int64_t capped = 0, dense_capped = 0;
      for (std::size_t b = 0; b < positions.size(); ++b) {
        train_batch(student, positions[b], labels[b], 2, [&](const MeasuredStep& m) {
          kf.update(m.e, m.grads);
          dense.update(m.e, m.grads);
        });
        capped += kf.take_diagnostics().capped;
        dense_capped += dense.take_diagnostics().capped;
        for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
          INFO("block " << i << " after batch " << b);
          CHECK(kf.covariance(i).diagonal().max().item<double>() <= 6.0 * (1.0 + 1e-6));
        }
      }
      CHECK(capped == dense_capped);
      CHECK(capped > 0);
      const double tol = f64 ? 1e-12 : 5e-6;
      CHECK(relative_difference(flatten_by_definition(student.params), dense.w) < tol);
      for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
        INFO("block " << i);
        CHECK(relative_difference(kf.covariance(i), dense.block(static_cast<std::size_t>(i))) < tol);
      }
    }
  }
}

TEST_CASE("a restored filter keeps the cap of the p0 it started from, whatever p0 restores it",
          "[optim][kalman][cap][restart]") {
  const std::vector<std::vector<std::int64_t>> shapes = {{6, 5}, {5}, {12}, {3, 3}};
  KalmanOptions options;
  options.blocksize = 16;
  options.lambda0 = 0.8;
  options.p_cap = 2.0;
  const std::string dir = make_temp_dir("kalman-cap-restart");

  // p0 chosen at the start (as the automatic p0 is): 5, so the cap is 10.
  auto straight = make_params(shapes, 21);
  KalmanFilter kf_straight(straight, options);
  kf_straight.set_p0(5.0);
  for (std::int64_t k = 0; k < 3; ++k) kf_straight.update(make_innovation(k), make_grads(straight, k));
  torch::serialize::OutputArchive archive;
  kf_straight.save(archive);
  archive.save_to(dir + "/state.pt");
  const auto saved_weights = clone_all(straight);
  std::int64_t capped = 0;
  for (std::int64_t k = 3; k < 20; ++k) {
    kf_straight.update(make_innovation(k), make_grads(straight, k));
    capped += kf_straight.take_diagnostics().capped;
  }
  REQUIRE(capped > 0);

  // Restored into a filter made with the default p0 1: the cap stays 10.
  auto resumed = clone_all(saved_weights);
  KalmanFilter kf_resumed(resumed, options);
  torch::serialize::InputArchive in;
  in.load_from(dir + "/state.pt");
  kf_resumed.load(in);
  for (std::int64_t k = 3; k < 20; ++k) kf_resumed.update(make_innovation(k), make_grads(resumed, k));
  for (std::size_t t = 0; t < shapes.size(); ++t) CHECK(torch::equal(resumed[t], straight[t]));
  for (std::int64_t i = 0; i < kf_straight.layout().num_blocks(); ++i) {
    CHECK(torch::equal(kf_resumed.covariance(i), kf_straight.covariance(i)));
    CHECK(kf_resumed.covariance(i).diagonal().max().item<double>() <= 10.0);
  }
}
