#include "src/learn/ParallelJobs.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace deepkf {

void run_parallel(std::size_t count, int workers, const std::function<void(std::size_t)>& job) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const auto threads = static_cast<std::size_t>(std::max(1, workers));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(threads, count); ++t) pool.emplace_back(work);
  work();  // the calling thread is one of the workers
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace deepkf
