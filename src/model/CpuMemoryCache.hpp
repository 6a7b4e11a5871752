#pragma once
// A cache of freed CPU tensor memory. LibTorch takes every CPU tensor from malloc, and glibc serves a block
// above its mmap threshold (128 KiB, rising with use to at most 32 MiB) with a fresh mmap and unmaps it at
// free: every model pass then takes a page fault, and the kernel zeroes a page, for each 4 KiB of its
// larger temporaries. On the water reference model (2 vCPUs) a one-frame energy pass ran about 3 times and
// an Adam step about 2 times slower for it, four frames about 4 times (docs/benchmarks.md, "CPU memory
// cache"). The cache keeps freed blocks of 64 KiB and more by size class (eight per power of two, so a
// block is at most 12.5% larger than asked) and hands them out again; it holds at most an eighth of the
// machine's memory or of the cgroup's limit where lower (at least 256 MiB), never a block over a quarter of
// that.
#include <cstdint>

namespace deepkf {

struct CpuMemoryCacheStats {
  std::int64_t cached_bytes = 0;  // freed and kept
  std::int64_t hits = 0;          // blocks handed out from the cache
  std::int64_t misses = 0;        // blocks of a cached size taken from the system
};

// Makes the cache LibTorch's CPU allocator, unless DEEPKF_CPU_MEMORY_CACHE is "0". Tensors allocated before
// keep their own deleter. Later calls do nothing. Also registers release_cpu_memory_cache() with
// available_host_memory(), so that a memory plan sees the cached bytes as free.
void use_cpu_memory_cache();

// Returns the cached blocks to the system.
void release_cpu_memory_cache();

CpuMemoryCacheStats cpu_memory_cache_stats();

}  // namespace deepkf
