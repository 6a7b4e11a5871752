// The CPU tensor cache (src/model/CpuMemoryCache.hpp): freed blocks come back for the same size class,
// tensors built on reused memory compute what fresh ones do, and a memory plan's reading releases it.
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <cstdlib>

#include "src/core/HostMemory.hpp"
#include "src/model/CpuMemoryCache.hpp"
#include "tests/support/Catch.hpp"

namespace {

void install() {
  unsetenv("DEEPKF_CPU_MEMORY_CACHE");
  deepkf::use_cpu_memory_cache();
}

}  // namespace

TEST_CASE("a freed block comes back for a request of its size class", "[model][memory]") {
  install();
  deepkf::release_cpu_memory_cache();
  const auto before = deepkf::cpu_memory_cache_stats();
  void* first = nullptr;
  {
    const auto t = torch::empty({125000}, torch::kFloat64);  // 1,000,000 bytes: class 1,048,576
    first = t.data_ptr();
  }
  CHECK(deepkf::cpu_memory_cache_stats().cached_bytes == 1048576);
  const auto again = torch::empty({130000}, torch::kFloat64);  // 1,040,000 bytes: the same class
  CHECK(again.data_ptr() == first);
  const auto after = deepkf::cpu_memory_cache_stats();
  CHECK(after.hits == before.hits + 1);
  CHECK(after.misses == before.misses + 1);
  CHECK(after.cached_bytes == 0);
  // another class: not the cached block
  const auto other = torch::empty({200000}, torch::kFloat64);
  CHECK(other.data_ptr() != first);
}

TEST_CASE("tensors on reused memory compute what fresh ones do", "[model][memory]") {
  install();
  torch::manual_seed(3);
  const auto a = torch::randn({300, 200}, torch::kFloat64);
  const auto b = torch::randn({200, 250}, torch::kFloat64);
  const auto reference = torch::matmul(a, b).sum().item<double>();
  for (int k = 0; k < 5; ++k) {
    const auto c = torch::matmul(a, b);  // its 600,000 bytes from the cache after the first round
    CHECK(c.sum().item<double>() == reference);
    const auto zeros = torch::zeros({300, 250}, torch::kFloat64);  // reused memory is zeroed when asked
    CHECK(zeros.abs().sum().item<double>() == 0.0);
  }
  CHECK(deepkf::cpu_memory_cache_stats().hits > 0);
}

TEST_CASE("reading the available memory releases the cache", "[model][memory]") {
  install();
  { const auto t = torch::empty({1 << 20}, torch::kFloat32); }
  CHECK(deepkf::cpu_memory_cache_stats().cached_bytes >= (std::int64_t{4} << 20));
  deepkf::available_host_memory();
  CHECK(deepkf::cpu_memory_cache_stats().cached_bytes == 0);
}

TEST_CASE("raw allocations of small and cached sizes are returned through the raw deleter",
          "[model][memory]") {
  install();
  auto* allocator = c10::GetCPUAllocator();
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{100}, std::size_t{70000}, std::size_t{5} << 20}) {
    void* p = allocator->raw_allocate(bytes);
    if (bytes > 0) {
      REQUIRE(p != nullptr);
      CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
      static_cast<char*>(p)[bytes - 1] = 1;
    }
    allocator->raw_deallocate(p);
  }
}
