// The CUDA sweep against the CPU one (built only when LibTorch has CUDA; the machine must have a GPU):
// products and updated blocks to round-off, flushes bit for bit on the device, the same bits on every run
// (no atomics), and the Kalman filter with its covariance on the GPU against the CPU filter.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "optim/BlockGrams.hpp"
#include "optim/KalmanFilter.hpp"
#include "optim/PackedCovariance.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"

using deepkf::PackedCovariance;
using deepkf::test::relative_difference;

namespace {

const std::vector<std::int64_t> kSizes = {1, 3, 127, 128, 129, 700, 1500, 37};

// The factor of a joint Kalman step's update, as KalmanFilter::update_joint forms it, on Y's device:
// U^T = C^-1 Y^T with C C^T = A = 2 I + sum_j H_j^T Y_j (gram as sweep_joint returns it, on the CPU), so
// that P_j - U_j U_j^T stays positive definite.
torch::Tensor joint_factor(const torch::Tensor& gram, const torch::Tensor& Y) {
  const auto m = gram.size(1);
  auto A = 2.0 * torch::eye(m, torch::kFloat64) + gram.sum(0);
  A = 0.5 * (A + A.t());
  const auto Cinv = torch::inverse(torch::linalg_cholesky(A));
  return Cinv.to(Y.device()).mm(Y).contiguous();
}

// Layers of several sizes, so that the per-block Y^T Y runs as batched products of more than one size.
const std::vector<std::vector<std::int64_t>> kLayerShapes = {{40, 30}, {30}, {300}, {7, 3}, {5}};

std::vector<torch::Tensor> on_gpu(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.to(torch::kCUDA));
  return out;
}

// The GPU filter's weights and covariance blocks against the CPU filter's, to a relative `tol`.
void check_follows(deepkf::KalmanFilter& gpu, const std::vector<torch::Tensor>& gpu_params,
                   deepkf::KalmanFilter& cpu, const std::vector<torch::Tensor>& cpu_params, double tol) {
  for (std::size_t t = 0; t < cpu_params.size(); ++t)
    CHECK(relative_difference(gpu_params[t], cpu_params[t]) < tol);
  for (std::int64_t i = 0; i < cpu.layout().num_blocks(); ++i)
    CHECK(relative_difference(gpu.covariance(i), cpu.covariance(i)) < tol);
}

// Twelve joint updates of 1 to 4 measurements, some with noise by share, on params' device; the length of
// each weight change.
std::vector<double> play_joint_steps(deepkf::KalmanFilter& kf, std::vector<torch::Tensor>& params) {
  std::vector<double> lengths;
  for (std::int64_t k = 0; k < 12; ++k) {
    const std::int64_t m = 1 + k % 4;
    std::vector<double> e;
    std::vector<std::vector<torch::Tensor>> grads;
    for (std::int64_t a = 0; a < m; ++a) {
      e.push_back(deepkf::test::make_innovation(5 * k + a));
      grads.emplace_back();
      for (const auto& g : deepkf::test::make_grads(params, 5 * k + a, 0.3))
        grads.back().push_back(g.to(params.front().device()));
    }
    std::vector<double> shares;
    if (k % 3 == 1) shares.assign(static_cast<std::size_t>(m), 0.4);
    std::vector<torch::Tensor> before;
    for (const auto& p : params) before.push_back(p.detach().clone());
    kf.update_joint(e, grads, shares);
    double moved2 = 0.0;
    for (std::size_t t = 0; t < params.size(); ++t)
      moved2 += (params[t] - before[t]).to(torch::kFloat64).square().sum().item<double>();
    lengths.push_back(std::sqrt(moved2));
  }
  return lengths;
}

}  // namespace

TEST_CASE("the CUDA sweep equals the CPU sweep to round-off and repeats its own bits",
          "[optim][packed][cuda]") {
  REQUIRE(torch::cuda::is_available());  // a CUDA build is tested on a machine with a GPU
  const auto N = std::accumulate(kSizes.begin(), kSizes.end(), std::int64_t{0});
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    PackedCovariance cpu(kSizes, 0.7, dtype, torch::kCPU);
    PackedCovariance gpu(kSizes, 0.7, dtype, torch::kCUDA);
    PackedCovariance gpu_flushed(kSizes, 0.7, dtype, torch::kCUDA);
    for (int step = 0; step < 6; ++step) {
      auto gen = at::make_generator<at::CPUGeneratorImpl>(500 + step);
      const auto h = 0.2 * at::randn({N}, gen, torch::kFloat64);
      std::vector<double> tc, tg, tf;
      if (step % 2 == 0) gpu_flushed.flush();
      const auto Kc = cpu.sweep(h, tc);
      const auto Kg = gpu.sweep(h.to(torch::kCUDA), tg);
      const auto Kf = gpu_flushed.sweep(h.to(torch::kCUDA), tf);
      // float32 blocks round each update once, and the CPU sweep (fused multiply-adds, products with the
      // value before that rounding) and the CUDA one (neither) may round differently.
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-6;
      CHECK(relative_difference(Kg, Kc) < tol);
      CHECK(torch::equal(Kg, Kf));  // flushing does not change the bits on the device either
      for (std::size_t j = 0; j < tc.size(); ++j) CHECK(tg[j] == Approx(tc[j]).epsilon(tol));
      double a = 2.0;
      for (double t : tc) a += t;
      cpu.defer_update(Kc, a, 0.98);
      gpu.defer_update(Kg, a, 0.98);
      gpu_flushed.defer_update(Kf, a, 0.98);
    }
    for (std::int64_t j = 0; j < cpu.num_blocks(); ++j) {
      INFO("block " << j);
      CHECK(relative_difference(gpu.dense(j), cpu.dense(j)) < (dtype == torch::kFloat64 ? 1e-12 : 1e-5));
      CHECK(torch::equal(gpu.packed(j), gpu_flushed.packed(j)));
    }
    // The diagonal's cap (scaling kernel) on the device as on the CPU: with one more update that only
    // divides by lambda, the least constrained diagonal values reach 0.7 / 0.98^7 = 0.80, above a cap of
    // 0.75.
    cpu.defer_update(torch::zeros({N}, torch::kFloat64), 2.0, 0.98);
    gpu.defer_update(torch::zeros({N}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA)),
                     2.0, 0.98);
    const auto scaled = cpu.cap_diagonal(0.75, 0.5);
    CHECK(scaled > 0);
    CHECK(gpu.cap_diagonal(0.75, 0.5) == scaled);
    for (std::int64_t j = 0; j < cpu.num_blocks(); ++j) {
      INFO("capped block " << j);
      CHECK(relative_difference(gpu.dense(j), cpu.dense(j)) < (dtype == torch::kFloat64 ? 1e-12 : 1e-5));
    }
  }
  // The same sweep twice gives the same bits (partial sums in a fixed order, no atomics).
  PackedCovariance a(kSizes, 1.0, torch::kFloat64, torch::kCUDA),
      b(kSizes, 1.0, torch::kFloat64, torch::kCUDA);
  const auto h = torch::randn({N}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA));
  std::vector<double> ta, tb;
  CHECK(torch::equal(a.sweep(h, ta), b.sweep(h, tb)));
}

TEST_CASE("the CUDA joint sweep equals the CPU joint sweep to round-off and repeats its own bits",
          "[optim][packed][cuda]") {
  REQUIRE(torch::cuda::is_available());
  const auto N = std::accumulate(kSizes.begin(), kSizes.end(), std::int64_t{0});
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const std::int64_t m : {1, 3, 6}) {
      INFO("dtype " << c10::toString(dtype) << ", m " << m);
      PackedCovariance cpu(kSizes, 0.7, dtype, torch::kCPU);
      PackedCovariance gpu(kSizes, 0.7, dtype, torch::kCUDA);
      PackedCovariance gpu_flushed(kSizes, 0.7, dtype, torch::kCUDA);
      for (int step = 0; step < 5; ++step) {
        auto gen = at::make_generator<at::CPUGeneratorImpl>(700 + 10 * m + step);
        const auto H = 0.2 * at::randn({m, N}, gen, torch::kFloat64);
        if (step % 2 == 0) gpu_flushed.flush();
        torch::Tensor gram_c, gram_g, gram_f;
        const auto Yc = cpu.sweep_joint(H, gram_c);
        const auto Yg = gpu.sweep_joint(H.to(torch::kCUDA), gram_g);
        const auto Yf = gpu_flushed.sweep_joint(H.to(torch::kCUDA), gram_f);
        // float32 blocks: the CPU kernel updates and sums in float32, the CUDA kernel in float64 before it
        // rounds each update once.
        const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
        CHECK(relative_difference(Yg, Yc) < tol);
        CHECK(relative_difference(gram_g, gram_c) < tol);
        CHECK(torch::equal(Yg, Yf));  // flushing does not change the bits on the device
        CHECK(torch::equal(gram_g, gram_f));
        cpu.defer_joint_update(joint_factor(gram_c, Yc), 0.98);
        const auto Ug = joint_factor(gram_c, Yg);  // one factor for both device copies: the same bits
        gpu.defer_joint_update(Ug, 0.98);
        gpu_flushed.defer_joint_update(Ug, 0.98);
      }
      for (std::int64_t j = 0; j < cpu.num_blocks(); ++j) {
        INFO("block " << j);
        CHECK(relative_difference(gpu.dense(j), cpu.dense(j)) < (dtype == torch::kFloat64 ? 1e-12 : 1e-5));
        CHECK(torch::equal(gpu.packed(j), gpu_flushed.packed(j)));
      }
    }
  }
}

TEST_CASE("a joint update flushed on the GPU equals the update inside a joint sweep bit for bit",
          "[optim][packed][cuda]") {
  REQUIRE(torch::cuda::is_available());
  const auto N = std::accumulate(kSizes.begin(), kSizes.end(), std::int64_t{0});
  // m = 2, 6 and 16 take the three shapes of the tile kernel (4, 2 and 1 columns a thread).
  for (const std::int64_t m : {2, 6, 16}) {
    INFO("m " << m);
    PackedCovariance swept(kSizes, 0.7, torch::kFloat64, torch::kCUDA);
    PackedCovariance flushed(kSizes, 0.7, torch::kFloat64, torch::kCUDA);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(900 + m);
    const auto H0 = (0.2 * at::randn({m, N}, gen, torch::kFloat64)).to(torch::kCUDA);
    torch::Tensor gram;
    const auto Y0 = swept.sweep_joint(H0, gram);
    CHECK(torch::equal(flushed.sweep_joint(H0, gram), Y0));
    const auto U = joint_factor(gram, Y0);
    swept.defer_joint_update(U, 0.98);
    flushed.defer_joint_update(U, 0.98);
    flushed.flush();  // the update alone
    CHECK(!flushed.has_pending());
    const auto H1 = (0.2 * at::randn({m, N}, gen, torch::kFloat64)).to(torch::kCUDA);
    torch::Tensor gram_s, gram_f;
    const auto Ys = swept.sweep_joint(H1, gram_s);  // the update inside the sweep
    const auto Yf = flushed.sweep_joint(H1, gram_f);
    CHECK(torch::equal(Ys, Yf));
    CHECK(torch::equal(gram_s, gram_f));
    for (std::int64_t j = 0; j < swept.num_blocks(); ++j) {
      INFO("block " << j);
      CHECK(torch::equal(swept.packed(j), flushed.packed(j)));
    }
  }
}

TEST_CASE("the Kalman filter with its covariance on the GPU follows the CPU filter",
          "[optim][kalman][cuda]") {
  REQUIRE(torch::cuda::is_available());
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    deepkf::KalmanOptions options;
    options.blocksize = 256;
    options.p_dtype = p_dtype;
    auto cpu_params = deepkf::test::make_params(kLayerShapes, 3);
    auto gpu_params = on_gpu(cpu_params);
    deepkf::KalmanFilter cpu(cpu_params, options);
    deepkf::KalmanFilter gpu(gpu_params, options);
    CHECK(gpu.covariance_bytes() == cpu.covariance_bytes());
    for (std::int64_t k = 0; k < 20; ++k) {
      const auto grads = deepkf::test::make_grads(cpu_params, k, 0.3);
      cpu.update(deepkf::test::make_innovation(k), grads);
      gpu.update(deepkf::test::make_innovation(k), on_gpu(grads));
    }
    const double tol = p_dtype == torch::kFloat64 ? 1e-11 : 1e-5;
    check_follows(gpu, gpu_params, cpu, cpu_params, tol);
    // The quadratic forms h_k^T P h_k (uncertainty): dense row panels on the GPU, the packed kernel here.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
    const auto H = at::randn({6, cpu.layout().num_parameters()}, gen, torch::kFloat64);
    const auto q_cpu = cpu.quadratic_forms(H), q_gpu = gpu.quadratic_forms(H);
    REQUIRE(q_gpu.size() == q_cpu.size());
    for (std::size_t k = 0; k < q_cpu.size(); ++k) {
      INFO("vector " << k << ": GPU " << q_gpu[k] << ", CPU " << q_cpu[k]);
      CHECK(std::abs(q_gpu[k] - q_cpu[k]) <= tol * std::abs(q_cpu[k]));
    }
  }
}

TEST_CASE("joint updates with shares, a trust radius and a capped diagonal on the GPU follow the CPU filter",
          "[optim][kalman][joint][trust][cuda]") {
  REQUIRE(torch::cuda::is_available());
  for (const auto p_dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("covariance " << c10::toString(p_dtype));
    deepkf::KalmanOptions options;
    options.blocksize = 256;
    options.p_dtype = p_dtype;
    // The radius: the median undamped step of the same updates, so that it binds in some of them.
    auto free_params = deepkf::test::make_params(kLayerShapes, 7);
    deepkf::KalmanFilter free(free_params, options);
    auto lengths = play_joint_steps(free, free_params);
    std::sort(lengths.begin(), lengths.end());
    options.trust_radius = lengths[lengths.size() / 2];
    // P grows by 1 / lambda each step where the gradients leave it: a cap of 1.05 p0 is reached.
    options.p_cap = 1.05;
    auto cpu_params = deepkf::test::make_params(kLayerShapes, 7);
    auto gpu_params = on_gpu(cpu_params);
    deepkf::KalmanFilter cpu(cpu_params, options);
    deepkf::KalmanFilter gpu(gpu_params, options);
    play_joint_steps(cpu, cpu_params);
    play_joint_steps(gpu, gpu_params);
    const auto d_cpu = cpu.take_diagnostics(), d_gpu = gpu.take_diagnostics();
    CHECK(d_cpu.damped > 0);
    CHECK(d_gpu.damped == d_cpu.damped);
    CHECK(d_cpu.capped > 0);
    CHECK(d_gpu.capped == d_cpu.capped);
    CHECK(std::abs(d_gpu.mean_p_diag - d_cpu.mean_p_diag) <= 1e-5 * d_cpu.mean_p_diag);
    // The damping solves |dw| = r to a relative 1e-6 on each side: weights and P agree to about that.
    check_follows(gpu, gpu_params, cpu, cpu_params, p_dtype == torch::kFloat64 ? 1e-5 : 3e-5);
  }
}

TEST_CASE("per-block products on the GPU equal the CPU sums", "[optim][packed][cuda]") {
  REQUIRE(torch::cuda::is_available());
  const std::vector<std::int64_t> sizes = {256, 256, 256, 100, 100, 3, 256};
  const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const auto X = at::randn({4, total}, gen, torch::kFloat64), Z = at::randn({4, total}, gen, torch::kFloat64);
  const auto want = deepkf::block_grams_cpu(X, Z, sizes);
  const auto got = deepkf::block_grams_batched(X.to(torch::kCUDA), Z.to(torch::kCUDA), sizes);
  REQUIRE(got.device().is_cpu());
  REQUIRE(got.sizes() == want.sizes());
  CHECK(relative_difference(got, want) < 1e-12);
}
