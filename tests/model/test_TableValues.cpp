// A compressed model's tables evaluated by LibTorch operations (EmbeddingTableImpl::values, the path of
// devices without the CPU kernel), run here on the CPU: against the kernel's reference lookup point by point
// (inside, on knots, before, beyond the end, not-a-number), its derivative against the polynomial's, and
// whole evaluations (energies, forces, virials, per-atom virials) against the kernel's.
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>

#include "src/model/TabulatedKernel.hpp"
#include "tests/model/CompressedTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"

using namespace deepkf;
using namespace deepkf::test;

TEST_CASE("a table by LibTorch operations gives the kernel's values and the polynomial's derivative",
          "[model][compress]") {
  auto model = compressed(false, torch::kFloat64);
  const auto& table = model->table();
  for (std::size_t k = 0; k < table.size(); ++k) {
    const auto& g = table.grid(k);
    const auto width = table.coefficients(k).size(2);
    const tabulated::Table<double> view{g, table.coefficients(k).data_ptr<double>()};
    // Before x0, on knots, inside fine and coarse intervals, at the end and beyond it.
    std::vector<double> xs = {g.x0 - 0.3,          g.x0,         g.x0 + 0.37 * g.step,          g.knot(3),
                              g.fine_end() - 1e-9, g.fine_end(), g.end() - 0.5 * g.coarse_step, g.end(),
                              g.end() + 0.7};
    const auto x = torch::tensor(xs, torch::kFloat64).requires_grad_(true);
    const auto values = table.values(k, x);
    REQUIRE(values.sizes() == torch::IntArrayRef({static_cast<std::int64_t>(xs.size()), width}));
    // dG_m/dx for every point: the sum over m of G_m, differentiated, is the sum of the slopes.
    const auto slope_sum = torch::autograd::grad({values.sum()}, {x})[0];
    for (std::size_t i = 0; i < xs.size(); ++i) {
      INFO("table " << k << ", x = " << xs[i]);
      std::vector<double> v(static_cast<std::size_t>(width)), d(static_cast<std::size_t>(width));
      tabulated::table_values(view, width, xs[i], v.data(), d.data());
      const auto ref = torch::tensor(v, torch::kFloat64);
      CHECK(relative_difference(values[static_cast<std::int64_t>(i)], ref) < 1e-14);
      double ref_slope = 0.0;
      for (const double s : d) ref_slope += s;
      CHECK(slope_sum[static_cast<std::int64_t>(i)].item<double>() ==
            Approx(ref_slope).epsilon(1e-12).margin(1e-12));
    }
    torch::Tensor beyond = torch::zeros({}, torch::kInt64);
    const auto nan = table.values(k, torch::tensor({std::numeric_limits<double>::quiet_NaN()}), &beyond);
    CHECK(torch::isnan(nan).all().item<bool>());
    table.values(k, x.detach(), &beyond);
    // x0 - 0.3 (more than a step before x0) and g.end() + 0.7: the end itself is on the last interval
    REQUIRE(0.3 > g.step);
    CHECK(beyond.item<std::int64_t>() == 2);
  }
}

TEST_CASE("a compressed model by LibTorch operations equals the kernel: energies, forces, virials",
          "[model][compress]") {
  // se_e2_a, and se_a_ebd_v2, whose kernel tables are G(s)'s times each pair's 1 + G_t
  const std::string descriptor = GENERATE(as<std::string>{}, "se_e2_a", "se_a_ebd_v2");
  INFO("descriptor " << descriptor);
  const auto cell = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  for (const bool one_side : {true, false}) {
    INFO("type_one_side " << one_side);
    auto m64 = compressed(one_side, torch::kFloat64, 5.0, descriptor);
    check_paths_agree(m64, cell, 1e-12);
    auto m32 = compressed(one_side, torch::kFloat32, 5.0, descriptor);
    check_paths_agree(m32, cell, 1e-5);
  }
  // Neighbours closer than the table reaches (tangent lines, counted) as in the kernel's own test.
  auto near = compressed(false, torch::kFloat64, 2.0);
  Config c;
  c.coord = {0, 0, 0, 0.3, 0.1, 0, 1.6, -0.2, 0.4};
  c.types = {0, 0, 1};
  near->set_table_kernel(false);
  CHECK(run(near, c).beyond_table == 2);
  check_paths_agree(near, c, 1e-12);
}
