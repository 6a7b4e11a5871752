// The GPU sweep's tile plan (optim/PackedTiles.hpp), checked on the CPU: every tile of every block once,
// disjoint workspace ranges, the block of every flat index, and the sweep's partial-sum layout replayed on
// the host against a dense product y = P h (every partial the gather reads was written by some tile).
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include "optim/PackedTiles.hpp"
#include "tests/support/Catch.hpp"

namespace packed = deepkf::packed;

namespace {

const std::vector<std::int64_t> kSizes = {1, 3, 127, 128, 129, 700, 257, 37};

// y = P h for the blocks of `plan`, P_j symmetric, computed as the kernels do: each tile adds its rows' and
// columns' partial products into the workspace, then y_g sums them in the gather's order.
std::vector<double> tiled_product(const packed::TilePlan& plan, const std::vector<torch::Tensor>& P,
                                  const std::vector<double>& h) {
  std::vector<double> ws(static_cast<std::size_t>(plan.workspace), std::numeric_limits<double>::quiet_NaN());
  for (const auto& t : plan.tiles) {
    const auto& b = plan.blocks[static_cast<std::size_t>(t.block)];
    const auto n = b.n;
    const auto p = P[static_cast<std::size_t>(t.block)].accessor<double, 2>();
    double* rows = ws.data() + b.workspace;
    double* cols = rows + packed::tiles_of(n) * n;
    const std::int64_t r0 = t.I * packed::kTile, c0 = t.J * packed::kTile;
    for (std::int64_t r = r0; r < std::min(n, r0 + packed::kTile); ++r) rows[t.J * n + r] = 0.0;
    for (std::int64_t c = c0; c < std::min(n, c0 + packed::kTile); ++c) cols[t.I * n + c] = 0.0;
    for (std::int64_t r = r0; r < std::min(n, r0 + packed::kTile); ++r) {
      for (std::int64_t c = std::max(r, c0); c < std::min(n, c0 + packed::kTile); ++c) {
        rows[t.J * n + r] += p[r][c] * h[static_cast<std::size_t>(b.offset + c)];
        if (c > r) cols[t.I * n + c] += p[r][c] * h[static_cast<std::size_t>(b.offset + r)];
      }
    }
  }
  const auto nb = static_cast<std::int64_t>(plan.blocks.size());
  const auto total = plan.blocks.back().offset + plan.blocks.back().n;
  std::vector<double> y(static_cast<std::size_t>(total));
  for (std::int64_t g = 0; g < total; ++g) {
    const auto& b = plan.blocks[static_cast<std::size_t>(packed::block_of(plan.blocks.data(), nb, g))];
    const auto n = b.n, r = g - b.offset, I = r / packed::kTile, tiles = packed::tiles_of(n);
    const double* rows = ws.data() + b.workspace;
    const double* cols = rows + tiles * n;
    double s = 0.0;
    for (std::int64_t J = I; J < tiles; ++J) s += rows[J * n + r];
    for (std::int64_t i = 0; i <= I; ++i) s += cols[i * n + r];
    y[static_cast<std::size_t>(g)] = s;
  }
  return y;
}

}  // namespace

TEST_CASE("the tile plan covers every tile of every block once, with disjoint workspace", "[optim][packed]") {
  const auto plan = packed::plan_tiles(kSizes);
  REQUIRE(plan.blocks.size() == kSizes.size());
  std::set<std::tuple<int, int, int>> seen;
  for (const auto& t : plan.tiles) {
    CHECK(t.J >= t.I);
    CHECK(seen.insert({t.block, t.I, t.J}).second);
  }
  std::int64_t offset = 0, workspace = 0, expected_tiles = 0;
  for (std::size_t j = 0; j < kSizes.size(); ++j) {
    INFO("block " << j << " of " << kSizes[j]);
    const auto& b = plan.blocks[j];
    CHECK(b.n == kSizes[j]);
    CHECK(b.offset == offset);
    CHECK(b.workspace == workspace);  // blocks' ranges follow each other: disjoint
    const auto t = packed::tiles_of(kSizes[j]);
    CHECK(t == (kSizes[j] + 127) / 128);
    for (std::int64_t I = 0; I < t; ++I)
      for (std::int64_t J = I; J < t; ++J) CHECK(seen.count({static_cast<int>(j), I, J}) == 1);
    expected_tiles += t * (t + 1) / 2;
    offset += kSizes[j];
    workspace += 2 * t * kSizes[j];
  }
  CHECK(static_cast<std::int64_t>(plan.tiles.size()) == expected_tiles);
  CHECK(plan.workspace == workspace);
  // the block of every flat index
  const auto nb = static_cast<std::int64_t>(plan.blocks.size());
  for (std::size_t j = 0; j < kSizes.size(); ++j)
    for (std::int64_t r = 0; r < kSizes[j]; ++r)
      REQUIRE(packed::block_of(plan.blocks.data(), nb, plan.blocks[j].offset + r) == static_cast<std::int64_t>(j));
  CHECK_THROWS(packed::plan_tiles({4, 0, 3}));
}

TEST_CASE("the sweep's partial sums laid out by the plan add up to P h", "[optim][packed]") {
  const auto plan = packed::plan_tiles(kSizes);
  std::vector<torch::Tensor> P;
  std::vector<double> h;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(17);
  for (const auto n : kSizes) {
    const auto A = at::randn({n, n}, gen, torch::kFloat64);
    P.push_back((A + A.t()).contiguous());
    const auto hj = at::randn({n}, gen, torch::kFloat64);
    h.insert(h.end(), hj.data_ptr<double>(), hj.data_ptr<double>() + n);
  }
  const auto y = tiled_product(plan, P, h);
  for (std::size_t j = 0; j < kSizes.size(); ++j) {
    INFO("block " << j << " of " << kSizes[j]);
    const auto& b = plan.blocks[j];
    const auto hj = torch::from_blob(h.data() + b.offset, {b.n}, torch::kFloat64);
    const auto ref = P[j].mv(hj);
    const auto got = torch::from_blob(const_cast<double*>(y.data()) + b.offset, {b.n}, torch::kFloat64);
    REQUIRE(std::isfinite(got.sum().item<double>()));  // no slot read that no tile wrote (NaN)
    CHECK((got - ref).abs().max().item<double>() <= 1e-12 * (1.0 + ref.abs().max().item<double>()));
  }
}
