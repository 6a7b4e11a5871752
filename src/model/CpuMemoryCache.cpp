#include "src/model/CpuMemoryCache.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "src/core/HostMemory.hpp"

namespace deepkf {

namespace {

constexpr std::size_t kAlignment = 64;                    // as LibTorch's own CPU allocator
constexpr std::size_t kSmallest = std::size_t{64} << 10;  // below: plain malloc, which keeps them in its heap

// The size class of a cached block: n rounded up to a multiple of 2^(k-3), 2^k <= n.
std::size_t size_class(std::size_t n) {
  const int top = 63 - __builtin_clzll(static_cast<unsigned long long>(n));
  const std::size_t step = std::size_t{1} << (top - 3);
  return (n + step - 1) / step * step;
}

void* system_block(std::size_t bytes) {
  void* p = nullptr;
  return posix_memalign(&p, kAlignment, bytes) == 0 ? p : nullptr;
}

void free_small(void* p) { std::free(p); }

class Cache final : public c10::Allocator {
 public:
  Cache() {
    const std::int64_t limit = host_memory_limit();  // the machine's, or the cgroup's where lower
    const std::size_t memory = limit > 0 ? static_cast<std::size_t>(limit) : 0;
    limit_ = std::max(std::size_t{256} << 20, memory / 8);
    largest_ = limit_ / 4;
  }

  c10::DataPtr allocate(std::size_t n) const override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &free_small, cpu};
    if (n < kSmallest) {
      void* p = system_block(n);
      TORCH_CHECK(p != nullptr, "CPU allocator: not enough memory: you tried to allocate ", n, " bytes");
      return {p, p, &free_small, cpu};
    }
    void* p = take(size_class(n));
    TORCH_CHECK(p != nullptr, "CPU allocator: not enough memory: you tried to allocate ", n, " bytes");
    return {p, p, &give_back, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &give_back; }

  void release() const {
    std::lock_guard<std::mutex> lock(mutex_);
    drop_all();
  }

  CpuMemoryCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {static_cast<std::int64_t>(cached_), hits_, misses_};
  }

  static Cache& instance() {
    static Cache* cache = new Cache();  // never destroyed: tensors may be freed during exit
    return *cache;
  }

 private:
  // A block of `size` bytes (a size class): a cached one, else the system's; nullptr when there is none.
  void* take(std::size_t size) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& blocks = free_[size];
      if (!blocks.empty()) {
        void* p = blocks.back();
        blocks.pop_back();
        cached_ -= size;
        ++hits_;
        live_[p] = size;
        return p;
      }
      ++misses_;
    }
    void* p = system_block(size);
    if (p == nullptr) {  // what the cache holds may be what is missing
      release();
      p = system_block(size);
      if (p == nullptr) return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    live_[p] = size;
    return p;
  }

  static void give_back(void* p) {
    if (p == nullptr) return;
    const Cache& cache = instance();
    std::lock_guard<std::mutex> lock(cache.mutex_);
    const auto it = cache.live_.find(p);
    if (it == cache.live_.end()) {  // a small block through raw_deallocate
      std::free(p);
      return;
    }
    const std::size_t size = it->second;
    cache.live_.erase(it);
    if (size > cache.largest_) {
      std::free(p);
      return;
    }
    if (cache.cached_ + size > cache.limit_) cache.drop_all();  // sizes no longer asked for go first
    cache.free_[size].push_back(p);
    cache.cached_ += size;
  }

  void drop_all() const {  // with mutex_ held
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
      blocks.clear();
    }
    free_.clear();
    cached_ = 0;
  }

  std::size_t limit_ = 0, largest_ = 0;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, std::size_t> live_;               // handed out: block -> size class
  mutable std::unordered_map<std::size_t, std::vector<void*>> free_;  // cached, by size class
  mutable std::size_t cached_ = 0;
  mutable std::int64_t hits_ = 0, misses_ = 0;
};

}  // namespace

void use_cpu_memory_cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* env = std::getenv("DEEPKF_CPU_MEMORY_CACHE"); env && std::strcmp(env, "0") == 0) return;
    c10::SetCPUAllocator(&Cache::instance(), /*priority=*/1);
    set_host_memory_release(&release_cpu_memory_cache);
  });
}

void release_cpu_memory_cache() { Cache::instance().release(); }

CpuMemoryCacheStats cpu_memory_cache_stats() { return Cache::instance().stats(); }

}  // namespace deepkf
