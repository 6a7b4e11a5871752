#include "src/core/HostMemory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// The first number in `path`, or -1 (missing file, "max", no number).
std::int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word.empty() || !std::isdigit(static_cast<unsigned char>(word[0]))) return -1;
  try {
    return static_cast<std::int64_t>(std::stoull(word));
  } catch (const std::exception&) {
    return -1;  // beyond int64: no limit worth the name
  }
}

std::int64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    std::int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

// The cgroup's memory limit (-1 without one) and the file of its current use.
struct CgroupMemory {
  std::int64_t limit = -1;
  const char* usage = nullptr;
};

CgroupMemory cgroup_memory() {
  const std::int64_t v2_max = read_number("/sys/fs/cgroup/memory.max");
  if (v2_max > 0) return {v2_max, "/sys/fs/cgroup/memory.current"};
  const std::int64_t v1_max = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  // v1 reports "no limit" as a huge number (2^63 rounded down to the page size).
  if (v1_max > 0 && v1_max < (std::int64_t{1} << 60))
    return {v1_max, "/sys/fs/cgroup/memory/memory.usage_in_bytes"};
  return {};
}

// What the cgroup limit leaves, or -1 without a limit.
std::int64_t cgroup_headroom() {
  const CgroupMemory cgroup = cgroup_memory();
  if (cgroup.limit < 0) return -1;
  return std::max<std::int64_t>(0, cgroup.limit - read_number(cgroup.usage));
}

std::atomic<void (*)()> host_memory_release{nullptr};

}  // namespace

void set_host_memory_release(void (*release)()) { host_memory_release = release; }

std::int64_t host_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const std::int64_t machine = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : -1;
  const std::int64_t cgroup = cgroup_memory().limit;
  if (machine < 0 || cgroup < 0) return std::max(machine, cgroup);
  return std::min(machine, cgroup);
}

std::int64_t available_host_memory() {
  if (const auto release = host_memory_release.load()) release();
  if (const char* env = std::getenv("DEEPKF_AVAILABLE_MEMORY"); env && *env)
    return parse_bytes(env, "DEEPKF_AVAILABLE_MEMORY");
  const std::int64_t avail = mem_available();
  const std::int64_t cgroup = cgroup_headroom();
  if (avail < 0) return cgroup;
  return cgroup < 0 ? avail : std::min(avail, cgroup);
}

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 0.95 * (1LL << 40)) return fmt::format("{:.1f} TiB", b / (1LL << 40));
  if (b >= 0.95 * (1LL << 30)) return fmt::format("{:.1f} GiB", b / (1LL << 30));
  if (b >= 0.95 * (1LL << 20)) return fmt::format("{:.1f} MiB", b / (1LL << 20));
  if (b >= 0.95 * (1LL << 10)) return fmt::format("{:.1f} KiB", b / (1LL << 10));
  return fmt::format("{} B", bytes);
}

std::int64_t parse_bytes(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double value = -1.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }),
             unit.end());
  double scale = 0.0;
  if (unit.empty() || unit == "B") scale = 1.0;
  if (unit == "KiB" || unit == "KB" || unit == "K") scale = 1024.0;
  if (unit == "MiB" || unit == "MB" || unit == "M") scale = 1024.0 * 1024;
  if (unit == "GiB" || unit == "GB" || unit == "G") scale = 1024.0 * 1024 * 1024;
  if (unit == "TiB" || unit == "TB" || unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  if (used == 0 || scale == 0.0 || !(value >= 0.0) || value * scale > 9.0e18)
    throw ConfigError(what + " is \"" + text + "\": give a size such as 16GiB or 17179869184");
  return static_cast<std::int64_t>(value * scale);
}

void advise_huge_pages(void* data, std::int64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) / page * page;
  const auto end =
      (reinterpret_cast<std::uintptr_t>(data) + static_cast<std::uintptr_t>(bytes)) / page * page;
  if (bytes > 0 && end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace deepkf
