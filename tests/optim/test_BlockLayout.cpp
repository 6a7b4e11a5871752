// The block layout of the parameters: the greedy gather/split rule that cuts them into blocks, and the flat
// order (2-d weights transposed) that gather and scatter keep.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "optim/BlockLayout.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"

using deepkf::BlockLayout;
using namespace deepkf::test;

namespace {

std::vector<std::int64_t> block_sizes(const BlockLayout& layout) {
  std::vector<std::int64_t> sizes;
  for (const auto& b : layout.blocks()) sizes.push_back(b.size());
  return sizes;
}

}  // namespace

TEST_CASE("block layout follows the greedy gather/split rule", "[optim][layout]") {
  SECTION("small tensors are gathered, big ones split, exact fits stay together") {
    // 12 > 10 opens a group alone; 12+5 > 10 closes it; 5+14 > 10; 14+2 > 10; 2+20 > 10.
    BlockLayout layout(kMixedShapes, 10);
    CHECK(block_sizes(layout) == std::vector<std::int64_t>{10, 2, 5, 10, 4, 2, 10, 10});
    CHECK(layout.num_parameters() == 53);
    CHECK(layout.covariance_elements() == 4 * 55 + 2 * 3 + 15 + 10);  // packed triangles n (n + 1) / 2
    // Blocks tile [0, N) without gaps.
    std::int64_t pos = 0;
    for (const auto& b : layout.blocks()) {
      CHECK(b.begin == pos);
      pos = b.end;
    }
    CHECK(pos == layout.num_parameters());
  }
  SECTION("a tensor larger than the block size") {
    CHECK(block_sizes(BlockLayout({{25}}, 10)) == std::vector<std::int64_t>{10, 10, 5});
    CHECK(block_sizes(BlockLayout({{3}, {25}, {3}}, 10)) == std::vector<std::int64_t>{3, 10, 10, 5, 3});
  }
  SECTION("exact multiples") {
    CHECK(block_sizes(BlockLayout({{20}}, 10)) == std::vector<std::int64_t>{10, 10});
    CHECK(block_sizes(BlockLayout({{4}, {6}}, 10)) == std::vector<std::int64_t>{10});  // s + n == b joins
    CHECK(block_sizes(BlockLayout({{4}, {6}, {1}}, 10)) == std::vector<std::int64_t>{10, 1});
    CHECK(block_sizes(BlockLayout({{2, 5}, {2, 5}}, 10)) == std::vector<std::int64_t>{10, 10});
  }
  SECTION("many tiny tensors") {
    std::vector<std::vector<std::int64_t>> shapes(30, std::vector<std::int64_t>{1});
    CHECK(block_sizes(BlockLayout(shapes, 7)) == std::vector<std::int64_t>{7, 7, 7, 7, 2});
    shapes.push_back({});  // a 0-d scalar counts as one value
    CHECK(block_sizes(BlockLayout(shapes, 31)) == std::vector<std::int64_t>{31});
  }
  SECTION("blocksize 1 gives one block per value") {
    BlockLayout layout({{2, 3}, {2}}, 1);
    CHECK(layout.num_blocks() == 8);
    CHECK(layout.covariance_elements() == 8);
  }
  SECTION("blocksize at least N is one block (GEKF)") {
    CHECK(block_sizes(BlockLayout(kMixedShapes, 53)) == std::vector<std::int64_t>{53});
    CHECK(block_sizes(BlockLayout(kMixedShapes, 1000)) == std::vector<std::int64_t>{53});
  }
  SECTION("bad input") {
    CHECK_THROWS_AS(BlockLayout({{2}}, 0), deepkf::OptimError);
    CHECK_THROWS_AS(BlockLayout({}, 10), deepkf::OptimError);
    CHECK_THROWS_AS(BlockLayout({{2, 2, 2}}, 10), deepkf::OptimError);
  }
}

TEST_CASE("block layout flattens 2-d weights transposed and scatters back in place", "[optim][layout]") {
  // W [3, 4] with W[r][c] = 10 r + c after a vector b [2] = (100, 101).
  auto b = torch::tensor({100.0, 101.0}, torch::kFloat64);
  auto w =
      (10 * torch::arange(3, torch::kFloat64).view({3, 1}) + torch::arange(4, torch::kFloat64).view({1, 4}))
          .contiguous();
  std::vector<torch::Tensor> params = {b, w};
  BlockLayout layout = BlockLayout::from_tensors(params, 5);
  const auto flat = layout.gather(params, torch::kFloat64);
  REQUIRE(flat.size(0) == 14);
  CHECK(flat[0].item<double>() == 100.0);
  CHECK(flat[1].item<double>() == 101.0);
  // W[r][c] lands at 2 + c * 3 + r: index 2 + 1*3 + 2 = 7 holds W[2][1] = 21; index 13 holds W[2][3] = 23.
  CHECK(flat[7].item<double>() == 21.0);
  CHECK(flat[2 + 3].item<double>() == 1.0);  // W[0][1]
  CHECK(flat[13].item<double>() == 23.0);
  CHECK(torch::equal(flat, flatten_by_definition(params)));

  // scatter is gather's inverse; undefined gradients gather as zeros.
  auto target = clone_all(params);
  for (auto& t : target) t.zero_();
  const auto* storage = target[1].data_ptr<double>();
  layout.scatter(layout.gather(params, torch::kFloat64), target);
  CHECK(target[1].data_ptr<double>() == storage);
  CHECK(torch::equal(target[1], w));
  const auto with_hole = layout.gather({torch::Tensor(), w}, torch::kFloat64);
  CHECK(with_hole[0].item<double>() == 0.0);
  CHECK(with_hole[7].item<double>() == 21.0);

  // Mismatches are errors.
  CHECK_THROWS_AS(layout.gather({w}, torch::kFloat64), deepkf::OptimError);
  CHECK_THROWS_AS(layout.gather({b, w.t()}, torch::kFloat64), deepkf::OptimError);
}
