// The joint (vector) measurement update: m = 1 is the scalar step bit for bit; m > 1 equals dense algebra
// (chained steps with the rank-m update pending, mixed with scalar steps and other m, float32 and float64,
// with and without the covariance cap); on a linear model with lambda = 1 it equals m scalar steps
// (the information-filter identity); a state saved with a joint update pending restores bit for bit.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <tuple>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "optim/PackedCovariance.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/DenseFilter.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"

using deepkf::KalmanFilter;
using deepkf::KalmanOptions;
using namespace deepkf::test;

namespace {

// Packed blocks with one and with several row chunks (the threads' unit), so partial sums are combined; two
// m-column measurement matrices and a pending update of rank m, drawn in that order from `gen`.
struct SweepCase {
  std::vector<std::int64_t> sizes{3, 900, 1, 1300};
  at::Generator gen;
  torch::Tensor H1, H2, U;
  SweepCase(std::int64_t m, std::uint64_t seed) : gen(at::make_generator<at::CPUGeneratorImpl>(seed)) {
    std::int64_t total = 0;
    for (const auto n : sizes) total += n;
    H1 = at::randn({m, total}, gen, torch::kFloat64);
    H2 = at::randn({m, total}, gen, torch::kFloat64);
    U = 0.01 * at::randn({m, total}, gen, torch::kFloat64);
  }
};

}  // namespace

TEST_CASE("a joint update of one measurement is the scalar update bit for bit", "[optim][kalman][joint]") {
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    KalmanOptions options;
    options.blocksize = 10;
    options.p_dtype = p_dtype;
    options.p0 = 3.0;
    options.p_cap = 2.0;
    auto a_params = make_params(kMixedShapes, 5);
    auto b_params = clone_all(a_params);
    KalmanFilter a(a_params, options), b(b_params, options);
    for (std::int64_t k = 0; k < 8; ++k) {
      const auto grads = make_grads(a_params, k);
      a.update(make_innovation(k), grads);
      b.update_joint({make_innovation(k)}, {grads});
    }
    for (std::size_t t = 0; t < a_params.size(); ++t) CHECK(torch::equal(a_params[t], b_params[t]));
    for (std::int64_t i = 0; i < a.layout().num_blocks(); ++i)
      CHECK(torch::equal(a.covariance(i), b.covariance(i)));
    CHECK(a.lambda() == b.lambda());
  }
}

TEST_CASE("joint updates equal dense algebra, chained and mixed with scalar updates",
          "[optim][kalman][joint]") {
  // 10, 2, 5, 10, 4, 2, 10, 10 with blocksize 10: blocks of one tensor, gathered tensors, split tensors.
  for (const std::int64_t blocksize : {10, 53}) {
    for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
      for (const double p_cap : {0.0, 3.0}) {
        INFO("kf_blocksize " << blocksize << ", covariance " << c10::toString(p_dtype) << ", p_cap "
                             << p_cap);
        const bool f64 = p_dtype == torch::kFloat64;
        KalmanOptions options;
        options.blocksize = blocksize;
        options.p_dtype = p_dtype;
        options.p0 = 2.0;
        options.p_cap = p_cap;
        options.lambda0 = 0.95;
        auto params = make_params(kMixedShapes, 11);
        KalmanFilter kf(params, options);
        DenseFilter dense(kf, params);
        // m per step: repeated (the pending update of rank m applied inside the next sweep), changed (flushed
        // first), a scalar step after a joint one and a joint one after a scalar one.
        const std::vector<std::int64_t> ms = {3, 3, 6, 6, 1, 4, 2, 2, 16, 5};
        for (std::size_t s = 0; s < ms.size(); ++s) {
          const auto step = make_joint(params, static_cast<std::int64_t>(s), ms[s]);
          kf.update_joint(step.e, step.grads);
          if (ms[s] == 1) {
            dense.update(step.e[0], step.grads[0]);
          } else {
            dense.update_joint(step.e, step.grads);
          }
        }
        // float32: P rounded to float32 per element and step; the joint sweep also multiplies and sums in float32.
        const double tol = f64 ? 1e-11 : 2e-5;
        CHECK(max_rel_diff(flatten_by_definition(params), dense.w) < tol);
        for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i) {
          INFO("block " << i);
          CHECK(max_rel_diff(kf.covariance(i), dense.block(static_cast<std::size_t>(i))) < tol);
        }
        CHECK(kf.lambda() == Approx(dense.lambda).epsilon(1e-14));
        const auto got = kf.take_diagnostics();
        const auto want = dense.take_diagnostics();
        CHECK(got.updates == static_cast<std::int64_t>(ms.size()));
        CHECK(got.mean_nis == Approx(want.mean_nis).epsilon(f64 ? 1e-10 : 1e-4));
        CHECK(got.rms_step == Approx(want.rms_step).epsilon(f64 ? 1e-10 : 1e-4));
        CHECK(got.mean_p_diag == Approx(want.mean_p_diag).epsilon(f64 ? 1e-11 : 1e-4));
        CHECK(got.capped == want.capped);
        if (p_cap > 0.0) CHECK(got.capped > 0);
      }
    }
  }
}

TEST_CASE("on a linear model with lambda = 1 a joint update equals the scalar updates of its measurements",
          "[optim][kalman][joint]") {
  // y_k = h_k^T w with fixed h_k: the extended filter is the exact linear one, and with no forgetting the
  // joint update of m measurements equals m sequential scalar updates (the information-filter identity),
  // each scalar step with its noise lambda = 1. One block (GEKF): with several, each update drops the
  // cross-block terms of its own K K^T, which the two orders drop differently.
  KalmanOptions options;
  options.blocksize = 1000;
  options.lambda0 = 1.0;
  options.nu = 1.0;
  options.p0 = 0.7;
  auto seq_params = make_params(kMixedShapes, 21);
  auto joint_params = clone_all(seq_params);
  KalmanFilter seq(seq_params, options), joint(joint_params, options);
  // Measurement k of step s: y = h^T w with target z = step.e[k]; the innovation z - h^T w on the weights
  // each filter holds when it takes the measurement.
  const auto innovation = [](double z, const std::vector<torch::Tensor>& grads,
                             const std::vector<torch::Tensor>& w) {
    return z - flatten_by_definition(grads).dot(flatten_by_definition(w)).item<double>();
  };
  for (std::int64_t s = 0; s < 6; ++s) {
    const auto step = make_joint(seq_params, s, 5);
    std::vector<double> e;
    for (std::size_t k = 0; k < step.e.size(); ++k)
      e.push_back(innovation(step.e[k], step.grads[k], joint_params));
    joint.update_joint(e, step.grads);
    for (std::size_t k = 0; k < step.e.size(); ++k)
      seq.update(innovation(step.e[k], step.grads[k], seq_params), step.grads[k]);
  }
  CHECK(max_rel_diff(flatten_by_definition(joint_params), flatten_by_definition(seq_params)) < 1e-10);
  for (std::int64_t i = 0; i < seq.layout().num_blocks(); ++i) {
    INFO("block " << i);
    CHECK(max_rel_diff(joint.covariance(i), seq.covariance(i)) < 1e-10);
  }
}

TEST_CASE("the diagnostics give each joint measurement's share of its error", "[optim][kalman][joint]") {
  // From P = p0 I the first update's A_kk = n lambda + p0 |h_k|^2 (n blocks), so the share of measurement k
  // is p0 |h_k|^2 / (n lambda + p0 |h_k|^2); the second update's shares, averaged with it, are smaller.
  KalmanOptions options;
  options.blocksize = 40;
  options.lambda0 = 0.98;
  options.p0 = 3.0;
  auto params = make_params(kMixedShapes, 5);
  KalmanFilter kf(params, options);
  const auto step = make_joint(params, 0, 3);
  kf.update_joint(step.e, step.grads);
  const auto first = kf.take_diagnostics();
  REQUIRE(first.mean_share.size() == 3);
  const double n = static_cast<double>(kf.layout().num_blocks());
  REQUIRE(n > 1);
  for (std::size_t k = 0; k < 3; ++k) {
    const double g = flatten_by_definition(step.grads[k]).pow(2).sum().item<double>();
    INFO("measurement " << k);
    CHECK(std::abs(first.mean_share[k] - 3.0 * g / (n * 0.98 + 3.0 * g)) < 1e-12);
  }
  CHECK(kf.take_diagnostics().mean_share.empty());  // nothing since the last call
  kf.update(step.e[0], step.grads[0]);              // scalar updates leave the shares out
  CHECK(kf.take_diagnostics().mean_share.empty());
}

TEST_CASE("a state saved with a joint update pending restores bit for bit",
          "[optim][kalman][joint][restart]") {
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    KalmanOptions options;
    options.blocksize = 10;
    options.p_dtype = p_dtype;
    auto a_params = make_params(kMixedShapes, 31);
    auto b_params = clone_all(a_params);
    KalmanFilter a(a_params, options);
    for (std::int64_t s = 0; s < 3; ++s) {
      const auto step = make_joint(a_params, s, 4);
      a.update_joint(step.e, step.grads);
    }
    torch::serialize::OutputArchive out;
    a.save(out);
    std::stringstream buffer;
    out.save_to(buffer);
    for (std::size_t t = 0; t < a_params.size(); ++t) b_params[t].detach().copy_(a_params[t]);
    KalmanFilter b(b_params, options);
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    b.load(in);
    for (std::int64_t s = 3; s < 6; ++s) {
      const auto step = make_joint(a_params, s, 4);
      a.update_joint(step.e, step.grads);
      b.update_joint(step.e, step.grads);
    }
    for (std::size_t t = 0; t < a_params.size(); ++t) CHECK(torch::equal(a_params[t], b_params[t]));
    for (std::int64_t i = 0; i < a.layout().num_blocks(); ++i)
      CHECK(torch::equal(a.covariance(i), b.covariance(i)));
  }
}

TEST_CASE("joint updates refuse bad counts and non-finite innovations", "[optim][kalman][joint]") {
  auto params = make_params(kMixedShapes, 41);
  KalmanOptions options;
  options.blocksize = 10;
  KalmanFilter kf(params, options);
  const auto step = make_joint(params, 0, 3);
  CHECK_THROWS_AS(kf.update_joint({}, {}), deepkf::OptimError);
  CHECK_THROWS_AS(kf.update_joint({0.1, 0.2}, step.grads), deepkf::OptimError);
  CHECK_THROWS_WITH(kf.update_joint({0.1, NAN, 0.2}, step.grads),
                    Catch::Contains("innovation e of measurement 1 is nan"));
  const auto many = make_joint(params, 1, deepkf::packed::kMaxJoint + 1);
  CHECK_THROWS_AS(kf.update_joint(many.e, many.grads), deepkf::OptimError);
  CHECK(kf.steps() == 0);
}

TEST_CASE("a congruence on one block applies the pending joint update to that block alone, as a flush would",
          "[optim][packed][joint]") {
  // The diagonal cap scales single blocks; with a joint update pending, only the scaled block is flushed
  // and the next sweep applies the update to the others: bit for bit what a full flush gives, in either
  // precision (a float32 block is updated and multiplied in float32, so a sweep multiplies the value it
  // stores).
  SweepCase sweep(3, 11);
  const auto& sizes = sweep.sizes;
  const auto &H1 = sweep.H1, &H2 = sweep.H2, &U = sweep.U;
  const auto s = 0.5 + 0.5 * at::rand({900}, sweep.gen, torch::kFloat64);
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    const auto run = [&](bool flush_all) {
      deepkf::PackedCovariance cov(sizes, 1.5, dtype, torch::kCPU);
      torch::Tensor gram;
      cov.sweep_joint(H1, gram);
      cov.defer_joint_update(U.clone(), 0.97);
      if (flush_all) cov.flush();
      cov.congruence(1, s);
      const double trace = cov.diagonal_sum();  // the pending update of the other blocks included
      const auto Y = cov.sweep_joint(H2, gram);
      cov.defer_joint_update(U.clone(), 0.97);
      cov.congruence(3, torch::ones({1300}, torch::kFloat64));
      std::vector<torch::Tensor> blocks;
      for (std::int64_t j = 0; j < cov.num_blocks(); ++j) blocks.push_back(cov.packed(j).clone());
      return std::make_tuple(trace, Y, gram, blocks);
    };
    const auto [trace_alone, y_alone, gram_alone, blocks_alone] = run(false);
    const auto [trace_all, y_all, gram_all, blocks_all] = run(true);
    // The trace adds the pending update to the stored diagonal in float64 (not rounded to float32 first).
    const double tol = dtype == torch::kFloat64 ? 0.0 : 1e-6;
    CHECK(std::abs(trace_alone - trace_all) <= tol * std::abs(trace_all));
    CHECK(torch::equal(y_alone, y_all));
    CHECK(torch::equal(gram_alone, gram_all));
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      INFO("block " << j);
      CHECK(torch::equal(blocks_alone[j], blocks_all[j]));
    }
  }
}

TEST_CASE("the joint sweep: a flush equals the update inside a sweep, and threads do not change a bit",
          "[optim][packed][joint]") {
  const SweepCase sweep(4, 9);
  const auto& sizes = sweep.sizes;
  const auto &H1 = sweep.H1, &H2 = sweep.H2, &U = sweep.U;
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    const auto run = [&](bool flush_between, int threads) {
      const int before = at::get_num_threads();
      at::set_num_threads(threads);
      deepkf::PackedCovariance cov(sizes, 1.5, dtype, torch::kCPU);
      torch::Tensor gram;
      cov.sweep_joint(H1, gram);
      cov.defer_joint_update(U.clone(), 0.97);
      if (flush_between) cov.flush();
      const auto Y = cov.sweep_joint(H2, gram);
      std::vector<torch::Tensor> blocks;
      for (std::int64_t j = 0; j < cov.num_blocks(); ++j) blocks.push_back(cov.packed(j).clone());
      at::set_num_threads(before);
      return std::make_tuple(Y, gram, blocks);
    };
    const auto [y_fused, gram_fused, blocks_fused] = run(false, 1);
    const auto [y_flushed, gram_flushed, blocks_flushed] = run(true, 1);
    const auto [y_threads, gram_threads, blocks_threads] = run(false, 2);
    CHECK(torch::equal(y_fused, y_flushed));
    CHECK(torch::equal(gram_fused, gram_flushed));
    CHECK(torch::equal(y_fused, y_threads));
    CHECK(torch::equal(gram_fused, gram_threads));
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      CHECK(torch::equal(blocks_fused[j], blocks_flushed[j]));
      CHECK(torch::equal(blocks_fused[j], blocks_threads[j]));
    }
    // And the product itself against dense algebra: Y = P H2 with P = (1.5 I - U U^T) / 0.97 per block;
    // float32 sums its products in float32 (about 1e-7 per term, up to 1,300 terms).
    const double tol = dtype == torch::kFloat64 ? 1e-13 : 2e-5;
    std::int64_t offset = 0;
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      INFO("block " << j);
      const auto n = sizes[j];
      const auto Uj = U.narrow(1, offset, n);
      const auto Pj = (1.5 * torch::eye(n, torch::kFloat64) - Uj.t().mm(Uj)) / 0.97;
      const auto want = Pj.mm(H2.narrow(1, offset, n).t()).t();
      CHECK(max_rel_diff(y_fused.narrow(1, offset, n), want) < tol);
      const auto want_gram = H2.narrow(1, offset, n).mm(want.t());
      CHECK(max_rel_diff(gram_fused[static_cast<std::int64_t>(j)], want_gram) < tol);
      offset += n;
    }
  }
}
