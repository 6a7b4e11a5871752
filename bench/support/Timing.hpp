#pragma once
// Median wall time of repeated calls, shared by the benchmarks.
#include <algorithm>
#include <chrono>
#include <vector>

namespace deepkf::bench {

// Median seconds of `repeats` calls of f, after two warm-up calls.
template <typename F>
double time_median(int repeats, F&& f) {
  f();
  f();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace deepkf::bench
