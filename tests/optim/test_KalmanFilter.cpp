// RLEKF: the packed, deferred update against dense algebra over energy, force and virial measurements,
// recursive least squares, flushes anywhere, symmetry and memory of P, and bad options.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/DenseFilter.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/optim/ToyPotential.hpp"
#include "tests/support/Catch.hpp"

using deepkf::KalmanFilter;
using deepkf::KalmanOptions;
using namespace deepkf::test;

TEST_CASE("kalman update equals dense block-diagonal algebra over energy, force and virial measurements",
          "[optim][kalman]") {
  // Labels from a teacher potential; the student's weights are trained by RLEKF on 12 batches of 2 frames of
  // 6 atoms: per batch one energy step, 3 force-group steps and one virial step (60 steps). The dense
  // filter takes the same h and e; the weights and every block must agree.
  const auto [positions, labels] = teacher_data();
  // 105 parameters in tensors of 16, 8, 64, 8, 8, 1: blocks of 1, a mixed layout, one split tensor, GEKF.
  for (const std::int64_t blocksize : {1, 20, 40, 105}) {
    for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
      const bool f64 = p_dtype == torch::kFloat64;
      INFO("kf_blocksize " << blocksize << ", covariance " << c10::toString(p_dtype));
      ToyPotential student(7);
      KalmanOptions options;
      options.blocksize = blocksize;
      options.p_dtype = p_dtype;
      options.p0 = 2.0;
      KalmanFilter kf(student.params, options);
      DenseFilter dense(kf, student.params);
      std::int64_t steps = 0;
      for (std::size_t b = 0; b < positions.size(); ++b) {
        train_batch(student, positions[b], labels[b], 2, [&](const MeasuredStep& m) {
          kf.update(m.e, m.grads);
          dense.update(m.e, m.grads);
          ++steps;
        });
        if (b % 4 == 1) {
          // The log's diagnostics over the updates since the last look, with P's pending update included.
          const auto got = kf.take_diagnostics();
          const auto want = dense.take_diagnostics();
          CHECK(got.updates == want.updates);
          CHECK(got.mean_nis == Approx(want.mean_nis).epsilon(f64 ? 1e-10 : 1e-5));
          CHECK(got.rms_step == Approx(want.rms_step).epsilon(f64 ? 1e-10 : 1e-5));
          CHECK(got.mean_p_diag == Approx(want.mean_p_diag).epsilon(f64 ? 1e-12 : 1e-5));
        }
      }
      REQUIRE(steps == 60);
      // float64: round-off only. float32: P is stored in float32 (relative rounding 6e-8 per element and
      // step) while the products are float64; after 60 steps the largest difference measured was 6.4e-7.
      const double tol = f64 ? 1e-12 : 5e-6;
      CHECK(max_rel_diff(flatten_by_definition(student.params), dense.w) < tol);
      for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
        INFO("block " << i);
        CHECK(max_rel_diff(kf.covariance(i), dense.block(static_cast<std::size_t>(i))) < tol);
      }
      CHECK(kf.lambda() == Approx(dense.lambda).epsilon(1e-15));
      CHECK(kf.steps() == 60);
      // Predicted variances h^T P h of gradient vectors (with the last step's update still pending) against
      // the dense P; the rows of H are in the flat order written out by definition.
      std::vector<torch::Tensor> rows;
      for (int k = 0; k < 5; ++k) rows.push_back(flatten_by_definition(make_grads(student.params, 70 + k)));
      const auto H = torch::stack(rows);
      const auto q = kf.quadratic_forms(H);
      REQUIRE(q.size() == 5);
      for (int k = 0; k < 5; ++k) {
        const auto h = H[k];
        CHECK(q[static_cast<std::size_t>(k)] == Approx(h.dot(dense.P.mv(h)).item<double>()).epsilon(tol));
      }
    }
  }
}

TEST_CASE(
    "flushing the deferred covariance update anywhere gives the same weights: float64 bit for bit, "
    "float32 to its rounding",
    "[optim][kalman]") {
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance dtype " << c10::toString(p_dtype));
    // A float32 sweep multiplies with updated values before they are rounded for storage (PackedSweep.cpp).
    const double tolerance = p_dtype == torch::kFloat64 ? 0.0 : 1e-6;
    KalmanOptions options;
    options.blocksize = 24;
    options.p_dtype = p_dtype;
    auto plain = make_params(kMixedShapes, 4);
    auto poked = clone_all(plain);
    KalmanFilter kf_plain(plain, options);
    KalmanFilter kf_poked(poked, options);
    for (std::int64_t k = 0; k < 30; ++k) {
      kf_plain.update(make_innovation(k), make_grads(plain, k, 0.5));
      kf_poked.update(make_innovation(k), make_grads(poked, k, 0.5));
      // Every way of reading P, at irregular steps.
      if (k % 3 == 0) kf_poked.flush();
      if (k % 7 == 1) (void)kf_poked.covariance(k % kf_poked.layout().num_blocks());
      if (k % 5 == 2) kf_poked.stream_covariance([](std::int64_t, const torch::Tensor&) {});
      if (k % 11 == 4) {
        torch::serialize::OutputArchive archive;
        kf_poked.save(archive);
      }
    }
    for (std::size_t t = 0; t < plain.size(); ++t) {
      INFO("parameter " << t << ", relative difference " << relative_difference(poked[t], plain[t]));
      CHECK(relative_difference(poked[t], plain[t]) <= tolerance);
    }
    for (std::int64_t i = 0; i < kf_plain.layout().num_blocks(); ++i) {
      const auto difference =
          relative_difference(kf_poked.packed_covariance(i), kf_plain.packed_covariance(i));
      INFO("block " << i << ", relative difference " << difference);
      CHECK(difference <= tolerance);
    }
  }
}

TEST_CASE("GEKF on a linear model with lambda = 1 is recursive least squares", "[optim][kalman]") {
  // y = sum_t <X_t, W_t> over parameters W_t of shapes [3, 4] and [5]: h = dy/dw = X. With lambda = 1,
  // nu = 1 and P_0 = p0 I, one block of all 17 weights is RLS, whose result after all samples is the
  // regularised least-squares solution (X^T X + I/p0)^-1 (X^T y + w0/p0), i.e. the LS solution for large p0.
  // Several blocks would not give it: the block-diagonal P drops the cross-covariances between blocks, so
  // each block's gain ignores how its weights correlate with the others' and the recursion no longer solves
  // the normal equations of the whole weight vector (it is a different, approximate filter).
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 4}, {5}};
  auto params = make_params(shapes, 3);
  for (auto& p : params) p.zero_();
  KalmanOptions options;
  options.blocksize = 5120;  // >= 17: one block
  options.lambda0 = 1.0;
  options.nu = 1.0;
  options.p0 = 1e8;
  KalmanFilter kf(params, options);
  REQUIRE(kf.layout().num_blocks() == 1);

  torch::manual_seed(11);
  const std::int64_t m = 60;
  const std::int64_t n = 17;
  const auto X = torch::randn({m, n}, torch::kFloat64);  // sample k's inputs, row-major over (W, b)
  const auto w_true = torch::randn({n}, torch::kFloat64);
  const auto y = X.mv(w_true) + 0.1 * torch::randn({m}, torch::kFloat64);

  for (std::int64_t k = 0; k < m; ++k) {
    const auto xk = X[k];
    std::vector<torch::Tensor> grads = {xk.narrow(0, 0, 12).view({3, 4}), xk.narrow(0, 12, 5)};
    // y_pred = x^T w ; e = y_ref - y_pred
    const double y_pred =
        (params[0] * grads[0]).sum().item<double>() + (params[1] * grads[1]).sum().item<double>();
    kf.update(y[k].item<double>() - y_pred, grads);
  }
  const auto w_ls = std::get<0>(torch::linalg_lstsq(X, y.view({m, 1}))).view({n});
  const auto w_kf = torch::cat({params[0].reshape({-1}), params[1]});
  INFO("least squares " << w_ls << "\nkalman " << w_kf);
  const double rel = (w_kf - w_ls).norm().item<double>() / w_ls.norm().item<double>();
  CHECK(rel < 1e-6);
  CHECK(kf.lambda() == 1.0);
}

TEST_CASE("covariance is symmetric by construction and its memory is sum n_i (n_i + 1) / 2",
          "[optim][kalman]") {
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance dtype " << c10::toString(p_dtype));
    auto params = make_params({{40, 30}, {30}, {300}, {7, 3}}, 5);
    KalmanOptions options;
    options.blocksize = 256;
    options.p_dtype = p_dtype;
    KalmanFilter kf(params, options);
    for (std::int64_t k = 0; k < 200; ++k) kf.update(make_innovation(k), make_grads(params, k, 0.1));
    std::int64_t elements = 0;
    for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
      const auto P = kf.covariance(i);
      INFO("block " << i << " of size " << P.size(0));
      CHECK(torch::equal(P, P.t()));
      CHECK(torch::isfinite(P).all().item<bool>());
      // Still positive definite after 200 steps: the smallest eigenvalue is positive.
      CHECK(torch::linalg_eigvalsh(P.to(torch::kFloat64)).min().item<double>() > 0.0);
      elements += P.size(0) * (P.size(0) + 1) / 2;
      CHECK(kf.packed_covariance(i).numel() == P.size(0) * (P.size(0) + 1) / 2);
    }
    const auto elem = p_dtype == torch::kFloat64 ? 8 : 4;
    CHECK(kf.covariance_bytes() == elements * elem);
    CHECK(kf.covariance_bytes() == kf.layout().covariance_elements() * elem);
    CHECK(kf.total_covariance_bytes() == kf.covariance_bytes());
    CHECK(kf.state_bytes() == kf.covariance_bytes());
  }
}

TEST_CASE("kalman filter rejects bad options and non-finite steps", "[optim][kalman]") {
  auto params = make_params({{4}}, 1);
  KalmanOptions options;
  options.lambda0 = 0.0;
  CHECK_THROWS_AS(KalmanFilter(params, options), deepkf::OptimError);
  options = KalmanOptions();
  options.p0 = -1.0;
  CHECK_THROWS_AS(KalmanFilter(params, options), deepkf::OptimError);
  options = KalmanOptions();
  options.p_cap = -2.0;
  CHECK_THROWS_AS(KalmanFilter(params, options), deepkf::OptimError);
  options = KalmanOptions();
  options.p_dtype = torch::kInt32;
  CHECK_THROWS_AS(KalmanFilter(params, options), deepkf::OptimError);
  auto mixed = params;
  mixed.push_back(torch::zeros({2}, torch::kFloat32));
  CHECK_THROWS_AS(KalmanFilter(mixed, KalmanOptions()), deepkf::OptimError);

  KalmanFilter kf(params, KalmanOptions());
  const auto before = params[0].clone();
  CHECK_THROWS_AS(kf.update(std::nan(""), {torch::ones({4}, torch::kFloat64)}), deepkf::OptimError);
  CHECK_THROWS_AS(kf.update(0.1, {torch::full({4}, std::nan(""), torch::kFloat64)}), deepkf::OptimError);
  CHECK(torch::equal(params[0], before));  // a refused step changes nothing
  CHECK(kf.steps() == 0);
}
