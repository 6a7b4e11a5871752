// Joint updates with noise by share and with a trust radius, against dense algebra: the share each
// measurement removes, no dependence on the scale of P, the radius as the larger noise it chooses, and the
// refusals of shares outside (0, 1).
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/DenseFilter.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"

using deepkf::KalmanFilter;
using deepkf::KalmanOptions;
using namespace deepkf::test;

TEST_CASE("noise by share: dense algebra, the share removed, and no dependence on the scale of P",
          "[optim][kalman][joint]") {
  // Measurement k's noise q_k (1 / s_k - 1), q_k = h_k^T P h_k, in place of L lambda where s_k > 0.
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    const bool f64 = p_dtype == torch::kFloat64;
    const KalmanOptions options = small_options(p_dtype);
    auto params = make_params(kMixedShapes, 13);
    KalmanFilter kf(params, options);
    DenseFilter dense(kf, params);
    // m = 1 with a share takes the joint path; shares mixed with the fixed noise (0).
    const std::vector<std::vector<double>> shares = {
        {0.5, 0.9, 0.9}, {0.3}, {0.0, 0.5, 0.0, 0.8}, {0.0, 0.0}};
    for (std::size_t s = 0; s < shares.size(); ++s) {
      const auto step =
          make_joint(params, static_cast<std::int64_t>(s), static_cast<std::int64_t>(shares[s].size()));
      kf.update_joint(step.e, step.grads, shares[s]);
      dense.update_joint(step.e, step.grads, shares[s]);
    }
    const double tol = f64 ? 1e-11 : 2e-5;
    CHECK(max_rel_diff(flatten_by_definition(params), dense.w) < tol);
    for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
      INFO("block " << i);
      CHECK(max_rel_diff(kf.covariance(i), dense.block(static_cast<std::size_t>(i))) < tol);
    }
  }
  // One linear measurement y = h^T w alone removes the fraction s of its error: h^T dw = s e, at any P.
  for (const double p0 : {1e-3, 1.0, 1e4}) {
    INFO("p0 " << p0);
    KalmanOptions options;
    options.blocksize = 10;
    options.p0 = p0;
    auto params = make_params(kMixedShapes, 17);
    KalmanFilter kf(params, options);
    const auto step = make_joint(params, 0, 1);
    const auto h = flatten_by_definition(step.grads[0]);
    const auto before = flatten_by_definition(params);
    kf.update_joint({0.25}, step.grads, {0.3});
    CHECK(h.dot(flatten_by_definition(params) - before).item<double>() == Approx(0.3 * 0.25).epsilon(1e-10));
    CHECK(kf.take_diagnostics().mean_share.at(0) == Approx(0.3).epsilon(1e-12));
  }
  // With every measurement by share, scaling P (p0) changes no weight: Y and A scale alike.
  std::vector<torch::Tensor> results;
  for (const double p0 : {1.0, 64.0}) {
    KalmanOptions options;
    options.blocksize = 10;
    options.p0 = p0;
    auto params = make_params(kMixedShapes, 19);
    KalmanFilter kf(params, options);
    for (std::int64_t s = 0; s < 4; ++s) {
      const auto step = make_joint(params, s, 3);
      kf.update_joint(step.e, step.grads, {0.6, 0.5, 0.4});
    }
    results.push_back(flatten_by_definition(params));
  }
  CHECK(max_rel_diff(results[0], results[1]) < 1e-10);
}

TEST_CASE("a trust radius bounds the weight change as the larger noise it chooses, against dense algebra",
          "[optim][kalman][joint][trust]") {
  // Radii that bind in some steps and not in others; m = 1 (scalar steps take the joint path) and m > 1,
  // with and without shares.
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const double radius : {0.05, 0.4}) {
      INFO("covariance " << c10::toString(p_dtype) << ", radius " << radius);
      const bool f64 = p_dtype == torch::kFloat64;
      KalmanOptions options = small_options(p_dtype);
      options.trust_radius = radius;
      auto params = make_params(kMixedShapes, 23);
      KalmanFilter kf(params, options);
      DenseFilter dense(kf, params);
      const std::vector<std::vector<double>> shares = {{}, {0.0, 0.5, 0.0}, {}, {0.3}, {}};
      const std::vector<std::int64_t> ms = {3, 3, 1, 1, 5};
      std::int64_t bound = 0;
      for (std::size_t s = 0; s < ms.size(); ++s) {
        const auto step = make_joint(params, static_cast<std::int64_t>(s), ms[s]);
        const auto before = flatten_by_definition(params);
        if (ms[s] == 1 && shares[s].empty())
          kf.update(step.e[0], step.grads[0]);
        else
          kf.update_joint(step.e, step.grads, shares[s]);
        dense.update_joint(step.e, step.grads, shares[s], radius);
        const double moved = (flatten_by_definition(params) - before).norm().item<double>();
        CHECK(moved <= radius * (1.0 + 1e-5));
        if (moved > radius * (1.0 - 1e-5)) ++bound;
      }
      CHECK(bound > 0);
      CHECK(bound < static_cast<std::int64_t>(ms.size()));
      const auto d = kf.take_diagnostics();
      CHECK(d.damped == bound);
      CHECK(d.rms_free_step > d.rms_step);
      // mu to a relative 1e-6 in both: weights and P agree to about that.
      const double tol = f64 ? 1e-5 : 3e-5;
      CHECK(max_rel_diff(flatten_by_definition(params), dense.w) < tol);
      for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
        INFO("block " << i);
        CHECK(max_rel_diff(kf.covariance(i), dense.block(static_cast<std::size_t>(i))) < tol);
      }
    }
  }
}

TEST_CASE("a trust radius that never binds changes no bit of a joint update",
          "[optim][kalman][joint][trust]") {
  // (m = 1 with a radius takes the joint path, not the scalar one: equal to dense algebra, above.)
  KalmanOptions options;
  options.blocksize = 10;
  options.lambda0 = 0.95;
  auto a_params = make_params(kMixedShapes, 29);
  auto b_params = clone_all(a_params);
  KalmanFilter a(a_params, options);
  options.trust_radius = 1e6;
  KalmanFilter b(b_params, options);
  for (std::int64_t s = 0; s < 4; ++s) {
    const auto step = make_joint(a_params, s, 2 + s % 2);
    a.update_joint(step.e, step.grads);
    b.update_joint(step.e, step.grads);
  }
  for (std::size_t t = 0; t < a_params.size(); ++t) CHECK(torch::equal(a_params[t], b_params[t]));
  for (std::int64_t i = 0; i < a.layout().num_blocks(); ++i)
    CHECK(torch::equal(a.covariance(i), b.covariance(i)));
  CHECK(b.take_diagnostics().damped == 0);
  options.trust_radius = -1.0;
  CHECK_THROWS_WITH(KalmanFilter(clone_all(a_params), options), Catch::Contains("trust_radius is -1"));
}

TEST_CASE("noise by share refuses shares outside 0 to 1 and a share count unlike the measurement count",
          "[optim][kalman][joint]") {
  auto params = make_params(kMixedShapes, 43);
  KalmanOptions options;
  options.blocksize = 10;
  KalmanFilter kf(params, options);
  const auto step = make_joint(params, 0, 2);
  CHECK_THROWS_WITH(kf.update_joint(step.e, step.grads, {0.5}),
                    Catch::Contains("1 shares for 2 measurements"));
  CHECK_THROWS_WITH(kf.update_joint(step.e, step.grads, {0.5, 1.0}),
                    Catch::Contains("share 1 is not in [0, 1)"));
  CHECK_THROWS_AS(kf.update_joint(step.e, step.grads, {-0.1, 0.5}), deepkf::OptimError);
  CHECK_THROWS_AS(kf.update_joint(step.e, step.grads, {NAN, 0.5}), deepkf::OptimError);
  CHECK(kf.steps() == 0);
}
