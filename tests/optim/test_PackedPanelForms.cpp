// The quadratic forms by dense row panels (the GPU's path, optim/PackedPanelForms.hpp), run here on the CPU
// against dense algebra and against the CPU kernel, for panels of one row, of a few rows and of whole blocks.
#include <torch/torch.h>

#include "optim/PackedCovariance.hpp"
#include "optim/PackedPanelForms.hpp"
#include "optim/PackedSweep.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"

using deepkf::test::relative_difference;
namespace packed = deepkf::packed;

namespace {

torch::Tensor random_symmetric(std::int64_t n, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto A = at::randn({n, n}, gen, torch::kFloat64);
  return (A + A.t()) / 2.0;  // indefinite: the forms need no positive definiteness
}

torch::Tensor pack(const torch::Tensor& dense, torch::ScalarType dtype) {
  const auto n = dense.size(0);
  const auto d = dense.to(dtype).contiguous();
  auto out = torch::empty({packed::triangle_size(n)}, d.options());
  if (dtype == torch::kFloat64) {
    packed::pack<double>(d.data_ptr<double>(), n, out.data_ptr<double>());
  } else {
    packed::pack<float>(d.data_ptr<float>(), n, out.data_ptr<float>());
  }
  return out;
}

}  // namespace

TEST_CASE("quadratic forms by dense row panels equal dense algebra for any panel height",
          "[optim][packed][uncertainty]") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const std::int64_t n : {1, 2, 7, 300}) {
      const auto A = random_symmetric(n, 10 + static_cast<std::uint64_t>(n));
      const auto P = pack(A, dtype);
      const auto stored = A.to(dtype).to(torch::kFloat64);  // what the packed block holds
      for (const std::int64_t m : {1, 3, 20}) {
        auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + static_cast<std::uint64_t>(n * m));
        const auto H = at::randn({n, m}, gen, torch::kFloat64);
        const auto ref = (H * stored.mm(H)).sum(0);
        // One row per panel, a few rows (a ragged last panel), the whole block in one.
        for (const std::int64_t panel : {std::int64_t{1}, 3 * n + 1, n * n}) {
          INFO(c10::toString(dtype) << ", n " << n << ", m " << m << ", panel of " << panel << " values");
          const auto q = packed::quadratic_forms_by_panels(P, n, H, panel);
          REQUIRE(q.sizes() == torch::IntArrayRef({m}));
          CHECK(relative_difference(q, ref) < 1e-12);
        }
      }
    }
  }
}

TEST_CASE("quadratic forms by panels equal the CPU kernel's over a covariance of several blocks",
          "[optim][packed][uncertainty]") {
  const std::vector<std::int64_t> sizes = {1, 37, 700, 5};
  deepkf::PackedCovariance cov(sizes, 1.0, torch::kFloat64, torch::kCPU);
  std::int64_t total = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    cov.assign(static_cast<std::int64_t>(j), random_symmetric(sizes[j], 50 + j));
    total += sizes[j];
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const auto H = at::randn({total, 9}, gen, torch::kFloat64);
  const auto kernel = cov.quadratic_forms(H);
  std::int64_t off = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    INFO("block " << j << " of size " << sizes[j]);
    const auto q = packed::quadratic_forms_by_panels(cov.packed(static_cast<std::int64_t>(j)), sizes[j],
                                                     H.narrow(0, off, sizes[j]), 1000);
    CHECK(relative_difference(q, kernel[static_cast<std::int64_t>(j)]) < 1e-12);
    off += sizes[j];
  }
}
