#include "src/core/Cores.hpp"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace deepkf {

namespace {

int machine_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace

int usable_cores() {
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) return std::max(1, CPU_COUNT(&mask));
#endif
  return machine_cores();
}

int threads_per_rank(int ranks_on_node) {
  return std::max(1, std::min(usable_cores(), machine_cores() / std::max(1, ranks_on_node)));
}

}  // namespace deepkf
