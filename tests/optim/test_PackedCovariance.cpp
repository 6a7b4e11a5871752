// The packed covariance: the fused sweep against dense algebra (y = P h, and the deferred rank-1 update),
// flushing against fusing (bit for bit in float64), the row chunks, and independence of the thread count.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <numeric>
#include <vector>

#include "optim/PackedCovariance.hpp"
#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"

using deepkf::PackedCovariance;
using deepkf::test::relative_difference;
namespace packed = deepkf::packed;

namespace {

// A random symmetric positive-definite n x n matrix (float64).
torch::Tensor random_spd(std::int64_t n, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto A = at::randn({n, n}, gen, torch::kFloat64) / std::sqrt(static_cast<double>(n));
  return A.mm(A.t()) + torch::eye(n, torch::kFloat64);
}

torch::Tensor random_vector(std::int64_t n, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn({n}, gen, torch::kFloat64);
}

// Block sizes with one, several and many row chunks, and blocks of 1; N values in all.
const std::vector<std::int64_t> kSizes = {1, 3, 1, 700, 1500, 37};
const std::int64_t N = std::accumulate(kSizes.begin(), kSizes.end(), std::int64_t{0});

}  // namespace

TEST_CASE("row chunks cover each block in balanced ranges that depend on n only", "[optim][packed]") {
  for (const std::int64_t n : {1, 2, 3, 7, 100, 513, 1024, 2048, 5120, 10240}) {
    INFO("n = " << n);
    const auto rows = packed::row_chunks(n);
    REQUIRE(rows.size() >= 2);
    CHECK(rows.front() == 0);
    CHECK(rows.back() == n);
    CHECK(rows.size() - 1 <= 16);
    for (std::size_t k = 0; k + 1 < rows.size(); ++k) CHECK(rows[k] < rows[k + 1]);
    // Element counts per chunk within 10% of the mean (one row's worth of slack) for blocks of many chunks.
    const double mean = static_cast<double>(packed::triangle_size(n)) / static_cast<double>(rows.size() - 1);
    for (std::size_t k = 0; k + 1 < rows.size() && rows.size() > 2; ++k) {
      const auto count = packed::row_offset(n, rows[k + 1]) - packed::row_offset(n, rows[k]);
      CHECK(std::abs(static_cast<double>(count) - mean) <= 0.1 * mean + static_cast<double>(n));
    }
  }
  CHECK(packed::row_chunks(10240).size() - 1 == 16);
  CHECK(packed::row_offset(5, 0) == 0);
  CHECK(packed::row_offset(5, 1) == 5);
  CHECK(packed::row_offset(5, 4) == 14);
  CHECK(packed::triangle_size(5) == 15);
}

TEST_CASE("packing keeps the upper triangle row by row and unpacking restores the symmetric matrix",
          "[optim][packed]") {
  const auto A = random_spd(6, 1);
  auto p = torch::empty({packed::triangle_size(6)}, torch::kFloat64);
  packed::pack<double>(A.data_ptr<double>(), 6, p.data_ptr<double>());
  // Row 1 starts at 6 with A[1][1], A[1][2], ...; the last value is A[5][5].
  CHECK(p[6].item<double>() == A[1][1].item<double>());
  CHECK(p[7].item<double>() == A[1][2].item<double>());
  CHECK(p[20].item<double>() == A[5][5].item<double>());
  auto B = torch::empty({6, 6}, torch::kFloat64);
  packed::unpack<double>(p.data_ptr<double>(), 6, B.data_ptr<double>());
  CHECK(torch::equal(A, B));
}

TEST_CASE("the fused sweep equals dense algebra: y = P h, then the deferred update inside y = P' h'",
          "[optim][packed]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const bool f64 = dtype == torch::kFloat64;
    INFO("dtype " << c10::toString(dtype));
    PackedCovariance cov(kSizes, 1.0, dtype, torch::kCPU);
    // Start from random symmetric blocks instead of p0 I.
    std::vector<torch::Tensor> P;
    for (std::size_t j = 0; j < kSizes.size(); ++j) {
      P.push_back(random_spd(kSizes[j], 10 + j).to(dtype).to(torch::kFloat64));
      cov.assign(static_cast<std::int64_t>(j), P.back());
    }
    CHECK(cov.bytes() == (1 + 6 + 1 + 700 * 701 / 2 + 1500 * 1501 / 2 + 37 * 38 / 2) * (f64 ? 8 : 4));

    double a = 0.0, lambda = 0.98;
    torch::Tensor K_prev;
    for (int step = 0; step < 3; ++step) {
      INFO("step " << step);
      const auto h = random_vector(N, 100 + step);
      std::vector<double> terms;
      const auto K = cov.sweep(h, terms);
      REQUIRE(terms.size() == kSizes.size());
      std::int64_t off = 0;
      for (std::size_t j = 0; j < kSizes.size(); ++j) {
        INFO("block " << j << " of size " << kSizes[j]);
        const auto n = kSizes[j];
        // The sweep multiplies with P_j as updated in float64 and stores it rounded to the block's dtype.
        auto updated = P[j];
        if (step > 0) {
          // P_j <- (P_j - K_j K_j^T / a) / lambda
          const auto k = K_prev.narrow(0, off, n);
          updated = (P[j] - torch::outer(k, k) / a) / lambda;
          P[j] = updated.to(dtype).to(torch::kFloat64);
        }
        const auto hj = h.narrow(0, off, n);
        const auto ref = updated.mv(hj);
        CHECK(relative_difference(K.narrow(0, off, n), ref) <
              (f64 ? 1e-13 : 1e-12));  // products in float64 for both
        CHECK(terms[j] == Approx(hj.dot(ref).item<double>()).epsilon(1e-12));
        off += n;
      }
      a = 7.5 + step;
      cov.defer_update(K, a, lambda);
      CHECK(cov.has_pending());
      K_prev = K;
    }
    // A flush applies the last update; the stored blocks are the reference rounded to the dtype.
    std::int64_t off = 0;
    for (std::size_t j = 0; j < kSizes.size(); ++j) {
      const auto k = K_prev.narrow(0, off, kSizes[j]);
      const auto ref = (P[j] - torch::outer(k, k) / a) / lambda;
      CHECK(relative_difference(cov.dense(static_cast<std::int64_t>(j)), ref) < (f64 ? 1e-14 : 1e-6));
      off += kSizes[j];
    }
    CHECK_FALSE(cov.has_pending());
  }
}

TEST_CASE(
    "flushing the deferred update equals applying it inside the sweep: float64 bit for bit, float32 to "
    "its rounding",
    "[optim][packed]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    // A float32 sweep multiplies with an updated value before it is rounded for storage; after a flush it
    // multiplies with the stored one. Products then differ by float32 rounding, and so do later updates.
    const double tolerance = dtype == torch::kFloat64 ? 0.0 : 1e-6;
    PackedCovariance fused(kSizes, 0.5, dtype, torch::kCPU);
    PackedCovariance flushed(kSizes, 0.5, dtype, torch::kCPU);
    for (int step = 0; step < 5; ++step) {
      const auto h = random_vector(N, 200 + step) * 0.1;
      std::vector<double> t1, t2;
      if (step % 2 == 1) flushed.flush();
      const auto K1 = fused.sweep(h, t1);
      const auto K2 = flushed.sweep(h, t2);
      CHECK(relative_difference(K2, K1) <= tolerance);
      for (std::size_t j = 0; j < t1.size(); ++j)
        CHECK(std::abs(t1[j] - t2[j]) <= tolerance * std::abs(t1[j]));
      if (step == 1) {
        // The same update on the same bits, once by a flush and once inside a sweep: equal bit for bit.
        for (std::int64_t j = 0; j < fused.num_blocks(); ++j)
          CHECK(torch::equal(fused.packed(j), flushed.packed(j)));
      }
      double a = 1.0;
      for (double t : t1) a += t;
      // Both take the fused run's K, so that only the flushes differ between them.
      fused.defer_update(K1, a, 0.98);
      flushed.defer_update(K1.clone(), a, 0.98);
    }
    for (std::int64_t j = 0; j < fused.num_blocks(); ++j) {
      INFO("block " << j);
      CHECK(relative_difference(flushed.packed(j), fused.packed(j)) <= tolerance);
    }
  }
}

TEST_CASE("the sweep gives the same bits with one thread and with several", "[optim][packed]") {
  const int threads = at::get_num_threads();
  std::vector<torch::Tensor> results;
  for (const int t : {1, 2, 3}) {
    at::set_num_threads(t);
    PackedCovariance cov(kSizes, 1.0, torch::kFloat64, torch::kCPU);
    torch::Tensor K;
    for (int step = 0; step < 3; ++step) {
      std::vector<double> terms;
      K = cov.sweep(random_vector(N, 300 + step), terms);
      cov.defer_update(K, 10.0, 0.99);
    }
    results.push_back(torch::cat({K, cov.packed(4)}));
  }
  at::set_num_threads(threads);
  CHECK(torch::equal(results[0], results[1]));
  CHECK(torch::equal(results[0], results[2]));
}

TEST_CASE("quadratic forms h_k^T P_j h_k of many vectors equal dense algebra, pending update included",
          "[optim][packed][uncertainty]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    INFO("dtype " << c10::toString(dtype));
    PackedCovariance cov(kSizes, 1.0, dtype, torch::kCPU);
    std::vector<torch::Tensor> P;
    for (std::size_t j = 0; j < kSizes.size(); ++j) {
      P.push_back(random_spd(kSizes[j], 40 + j).to(dtype).to(torch::kFloat64));
      cov.assign(static_cast<std::int64_t>(j), P.back());
    }
    // A pending update: the forms must see P' = (P - K K^T / a) / lambda.
    std::vector<double> unused;
    const auto K = cov.sweep(random_vector(N, 500), unused);
    cov.defer_update(K, 25.0, 0.97);
    std::int64_t off = 0;
    for (std::size_t j = 0; j < kSizes.size(); ++j) {
      const auto k = K.narrow(0, off, kSizes[j]);
      P[j] = ((P[j] - torch::outer(k, k) / 25.0) / 0.97).to(dtype).to(torch::kFloat64);
      off += kSizes[j];
    }
    // Vector counts that use every width of the kernel (8, 4, 2, 1) and more than one pass of eight.
    for (const std::int64_t m : {1, 2, 3, 7, 8, 13, 20}) {
      INFO(m << " vectors");
      auto gen = at::make_generator<at::CPUGeneratorImpl>(600 + static_cast<std::uint64_t>(m));
      const auto H = at::randn({N, m}, gen, torch::kFloat64);
      const auto terms = cov.quadratic_forms(H);
      REQUIRE(terms.sizes() == torch::IntArrayRef({cov.num_blocks(), m}));
      off = 0;
      for (std::size_t j = 0; j < kSizes.size(); ++j) {
        INFO("block " << j << " of size " << kSizes[j]);
        const auto Hj = H.narrow(0, off, kSizes[j]);
        // diag(H_j^T P_j H_j), dense
        const auto ref = (Hj * P[j].mm(Hj)).sum(0);
        CHECK(relative_difference(terms[static_cast<std::int64_t>(j)], ref) < 1e-12);
        off += kSizes[j];
      }
    }
    CHECK_FALSE(cov.has_pending());
  }
}

TEST_CASE("quadratic forms give the same bits with one thread and with several",
          "[optim][packed][uncertainty]") {
  const int threads = at::get_num_threads();
  PackedCovariance cov(kSizes, 1.0, torch::kFloat64, torch::kCPU);
  for (std::size_t j = 0; j < kSizes.size(); ++j)
    cov.assign(static_cast<std::int64_t>(j), random_spd(kSizes[j], 70 + j));
  auto gen = at::make_generator<at::CPUGeneratorImpl>(71);
  const auto H = at::randn({N, 11}, gen, torch::kFloat64);
  std::vector<torch::Tensor> results;
  for (const int t : {1, 2, 3}) {
    at::set_num_threads(t);
    results.push_back(cov.quadratic_forms(H));
  }
  at::set_num_threads(threads);
  CHECK(torch::equal(results[0], results[1]));
  CHECK(torch::equal(results[0], results[2]));
  CHECK_THROWS_AS(cov.quadratic_forms(H.narrow(0, 1, N - 1).contiguous()), deepkf::OptimError);
  CHECK_THROWS_AS(cov.quadratic_forms(H.t()), deepkf::OptimError);
}

TEST_CASE("packed covariance refuses blocks of the wrong shape and vectors of the wrong size",
          "[optim][packed]") {
  PackedCovariance cov({4, 2}, 1.0, torch::kFloat64, torch::kCPU);
  CHECK_THROWS_AS(cov.assign(0, torch::zeros({9})), deepkf::OptimError);
  CHECK_THROWS_AS(cov.assign(0, torch::zeros({3, 3})), deepkf::OptimError);
  cov.assign(1, torch::tensor({2.0, 0.5, 3.0}, torch::kFloat64));  // packed [2, 0.5; 0.5, 3]
  CHECK(torch::equal(cov.dense(1), torch::tensor({2.0, 0.5, 0.5, 3.0}, torch::kFloat64).view({2, 2})));
  CHECK(torch::equal(cov.dense(0), torch::eye(4, torch::kFloat64)));
  std::vector<double> terms;
  CHECK_THROWS_AS(cov.sweep(torch::zeros({5}, torch::kFloat64), terms), deepkf::OptimError);
  CHECK_THROWS_AS(cov.sweep(torch::zeros({6}, torch::kFloat32), terms), deepkf::OptimError);
  CHECK_THROWS_AS(PackedCovariance({3}, 1.0, torch::kInt32, torch::kCPU), deepkf::OptimError);
}
