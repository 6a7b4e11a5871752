#pragma once
// The CPU side of the packed covariance runs its row chunks on LibTorch's intra-op threads
// (PackedCovariance.cpp, PackedCovarianceJoint.cpp).
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace deepkf {

// job(t) for t in [0, count) on LibTorch's intra-op threads, each thread taking the next t from a shared
// counter (chunks differ in cost between blocks, so a static split would leave threads idle).
template <typename F>
inline void for_each_task(std::int64_t count, const F& job) {
  if (count <= 0) return;
  const std::int64_t threads = std::min<std::int64_t>(at::get_num_threads(), count);
  std::atomic<std::int64_t> next{0};
  at::parallel_for(0, threads, 1, [&](std::int64_t, std::int64_t) {
    for (std::int64_t t = next.fetch_add(1); t < count; t = next.fetch_add(1)) job(t);
  });
}

}  // namespace deepkf
