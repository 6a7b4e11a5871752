#pragma once
// How much host memory this process can still take: the smaller of the kernel's estimate of memory
// available without swapping (MemAvailable in /proc/meminfo) and what the process's cgroup limit leaves
// (cgroup v2 memory.max - memory.current, or v1 memory.limit_in_bytes - memory.usage_in_bytes).
// DEEPKF_AVAILABLE_MEMORY (bytes, or a number with KiB/MiB/GiB/TiB) overrides both, for a job that shares
// its node or to test the memory plan.
#include <cstdint>
#include <string>

namespace deepkf {

// Bytes available now; -1 when nothing could be read (not Linux, no /proc). Calls the release function
// set below first, so that memory a cache of this process keeps counts as available.
std::int64_t available_host_memory();

// The memory this process may hold at most: the machine's physical memory, or the cgroup's limit where it
// is lower; -1 when neither can be read.
std::int64_t host_memory_limit();

// The function available_host_memory() calls first (the CPU tensor cache's release; nullptr: none).
void set_host_memory_release(void (*release)());

// Asks the kernel to back [data, data + bytes) with transparent huge pages when it first touches them
// (madvise MADV_HUGEPAGE on the whole pages inside; Linux only, and only where the system's setting is
// "madvise" or "always"). A hint: nothing changes where it is refused. Memory written for the first time
// then takes a page fault per 2 MiB instead of one per 4 KiB.
void advise_huge_pages(void* data, std::int64_t bytes);

// "12.3 GiB", "512.0 MiB", "900 B".
std::string format_bytes(std::int64_t bytes);

// Parses "17179869184", "16GiB", "16 GiB", "512MiB" (binary units; also GB/MB read as GiB/MiB). Throws
// ConfigError naming `what` for anything else.
std::int64_t parse_bytes(const std::string& text, const std::string& what);

}  // namespace deepkf
