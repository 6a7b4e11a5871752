// usable_cores and threads_per_rank against the kernel's affinity mask, narrowed by the test as an MPI
// launcher's binding would narrow it.
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>

#include "src/core/Cores.hpp"

namespace {

int machine() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

int mask_count() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
  return CPU_COUNT(&mask);
}

}  // namespace

TEST_CASE("usable_cores counts the affinity mask and threads_per_rank shares the node", "[core][cores]") {
  CHECK(deepkf::usable_cores() == mask_count());
  CHECK(deepkf::usable_cores() <= machine());
  for (int ranks : {1, 2, 3, machine(), 4 * machine()}) {
    INFO("ranks on the node: " << ranks);
    CHECK(deepkf::threads_per_rank(ranks) == std::max(1, std::min(mask_count(), machine() / ranks)));
  }
  CHECK(deepkf::threads_per_rank(0) == deepkf::threads_per_rank(1));
}

TEST_CASE("a process bound to one core gets one thread whatever its share", "[core][cores]") {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const int usable = deepkf::usable_cores();
  const int share_of_one = deepkf::threads_per_rank(1);
  const int share_of_two = deepkf::threads_per_rank(2);
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  CHECK(usable == 1);
  CHECK(share_of_one == 1);
  CHECK(share_of_two == 1);
  CHECK(deepkf::usable_cores() == CPU_COUNT(&saved));
}
