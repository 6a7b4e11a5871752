// The memory plan: covariance bytes per rank against the packed-triangle count written out, the choice of
// kf_blocksize and precision for "auto", explicit choices kept, and the message when nothing asked for fits.
#include "optim/MemoryPlan.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"
#include "tests/support/Catch.hpp"

using Catch::Matchers::Contains;
using deepkf::MemoryNeed;
using deepkf::plan_memory;

namespace {

constexpr std::int64_t kMiB = 1 << 20;

// One tensor of 20000 weights: blocks of b, b, ... and the rest (a tensor larger than b is split).
MemoryNeed need_of(std::int64_t available, int nranks = 1) {
  MemoryNeed need;
  need.shapes = {{20000}};
  need.available = available;
  need.nranks = nranks;
  need.batch_bytes = 10 * kMiB;
  return need;
}

// Packed values of blocks of size b tiling n weights: sum n_i (n_i + 1) / 2.
std::int64_t triangle_values(std::int64_t n, std::int64_t b) {
  std::int64_t total = 0;
  for (std::int64_t begin = 0; begin < n; begin += b) {
    const std::int64_t m = std::min(b, n - begin);
    total += m * (m + 1) / 2;
  }
  return total;
}

}  // namespace

TEST_CASE("memory plan counts packed covariance and the vectors", "[train][memory]") {
  const auto plan = plan_memory(need_of(-1), 0, "auto");  // unknown memory: the largest, float64
  CHECK(plan.blocksize == 5120);
  CHECK(plan.p_precision == "float64");
  CHECK(plan.covariance_bytes == 8 * triangle_values(20000, 5120));
  // weights and gradient (float64), h, K, pending K and the update in float64, one batch
  CHECK(plan.other_bytes == 6 * 20000 * 8 + 10 * kMiB);
  CHECK_THAT(plan.describe(), Contains("kf_blocksize 5120, float64") && Contains("available (host)"));

  // Two ranks: the fuller rank holds at least half of the blocks' values and less than all.
  const auto two = plan_memory(need_of(-1, 2), 5120, "float64");
  CHECK(two.covariance_bytes < plan.covariance_bytes);
  CHECK(two.covariance_bytes >= plan.covariance_bytes / 2);

  // On a GPU the sweep's partial sums come with P: 2 ceil(n / 128) n float64 values per block of n
  // (blocks 5120, 5120, 5120, 4640: 40 and 37 tiles per side).
  auto gpu = need_of(-1);
  gpu.where = "cuda:0";
  const auto on_gpu = plan_memory(gpu, 5120, "float32");
  CHECK(on_gpu.covariance_bytes == 4 * triangle_values(20000, 5120) + 8 * 2 * (3 * 40 * 5120 + 37 * 4640));
}

TEST_CASE("auto picks the largest block size in float64 that fits, then float32", "[train][memory]") {
  const std::int64_t other = 6 * 20000 * 8 + 10 * kMiB;
  const auto total = [&](std::int64_t b, std::int64_t bytes) {
    return bytes * triangle_values(20000, b) + other;
  };
  // Room for 4096 in float64 but not 5120 (within the 90 % usable).
  const auto room = static_cast<std::int64_t>(static_cast<double>(total(4096, 8)) / 0.9) + 1;
  REQUIRE(total(5120, 8) > 0.9 * room);
  auto plan = plan_memory(need_of(room), 0, "auto");
  CHECK(plan.blocksize == 4096);
  CHECK(plan.p_precision == "float64");
  // kf_blocksize fixed at 5120: float32 instead.
  plan = plan_memory(need_of(room), 5120, "auto");
  CHECK(plan.blocksize == 5120);
  CHECK(plan.p_precision == "float32");
  // float64 fixed and little room: a smaller block.
  const auto small = static_cast<std::int64_t>(static_cast<double>(total(1024, 8)) / 0.9) + 1;
  plan = plan_memory(need_of(small), 0, "float64");
  CHECK(plan.blocksize == 1024);
  // Blocks of at most 1024 (kf_update "auto"'s joint update) in float32: 1024 where it fits, else smaller.
  plan = plan_memory(need_of(-1), 0, "float32", 1024);
  CHECK(plan.blocksize == 1024);
  CHECK(plan.p_precision == "float32");
  const auto tight = static_cast<std::int64_t>(static_cast<double>(total(512, 4)) / 0.9) + 1;
  REQUIRE(total(1024, 4) > 0.9 * tight);
  plan = plan_memory(need_of(tight), 0, "float32", 1024);
  CHECK(plan.blocksize == 512);
  // A block size given is kept whatever the cap.
  CHECK(plan_memory(need_of(-1), 5120, "float32", 1024).blocksize == 5120);
}

TEST_CASE("a choice that does not fit stops with the need and the options", "[train][memory]") {
  const std::int64_t other = 6 * 20000 * 8 + 10 * kMiB;
  const auto room =
      static_cast<std::int64_t>(static_cast<double>(8 * triangle_values(20000, 2048) + other) / 0.9) + 1;
  try {
    plan_memory(need_of(room), 5120, "float64");
    FAIL("no error");
  } catch (const deepkf::ResourceError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("not enough memory: kf_blocksize 5120, float64 needs " +
                              deepkf::format_bytes(8 * triangle_values(20000, 5120))));
    CHECK_THAT(what, Contains("these fit: kf_blocksize 2048, float64"));
    CHECK_THAT(what, Contains("kf_blocksize 5120, float64 with 2 ranks") ||
                         Contains("kf_blocksize 5120, float64 with 4 ranks"));
  }
  // Nothing fits at all.
  CHECK_THROWS_WITH(plan_memory(need_of(kMiB), 0, "auto"), Contains("use a smaller model"));
}

TEST_CASE("sizes in messages and in DEEPKF_AVAILABLE_MEMORY", "[train][memory]") {
  CHECK(deepkf::format_bytes(900) == "900 B");
  CHECK(deepkf::format_bytes(3 * kMiB / 2) == "1.5 MiB");
  CHECK(deepkf::format_bytes(std::int64_t{20} << 30) == "20.0 GiB");
  CHECK(deepkf::parse_bytes("16GiB", "x") == std::int64_t{16} << 30);
  CHECK(deepkf::parse_bytes("512 MiB", "x") == 512 * kMiB);
  CHECK(deepkf::parse_bytes("1000", "x") == 1000);
  CHECK_THROWS_WITH(deepkf::parse_bytes("lots", "DEEPKF_AVAILABLE_MEMORY"),
                    "DEEPKF_AVAILABLE_MEMORY is \"lots\": give a size such as 16GiB or 17179869184");
  CHECK(deepkf::available_host_memory() != 0);
}
