#include "src/train/CheckpointSpace.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"

namespace deepkf {

namespace fs = std::filesystem;

std::int64_t checkpoint_bytes(const std::vector<std::int64_t>& block_sizes, torch::ScalarType block_dtype,
                              std::int64_t weight_bytes) {
  std::int64_t values = 0;
  for (const auto n : block_sizes) values += packed::triangle_size(n);
  return values * static_cast<std::int64_t>(c10::elementSize(block_dtype)) + 4 * weight_bytes + (1 << 20);
}

std::int64_t checkpoint_writes(std::int64_t step, std::int64_t numb_steps, std::int64_t save_freq) {
  if (numb_steps <= step || save_freq < 1) return 0;
  return numb_steps / save_freq - step / save_freq + (numb_steps % save_freq != 0 ? 1 : 0);
}

void check_checkpoint_space(const std::string& path, std::int64_t bytes, std::int64_t writes) {
  if (writes <= 0) return;
  const fs::path file = fs::absolute(path);
  const fs::path folder = file.parent_path();
  std::int64_t available = -1;
  if (const char* env = std::getenv("DEEPKF_AVAILABLE_DISK"); env && *env) {
    available = parse_bytes(env, "DEEPKF_AVAILABLE_DISK");
  } else {
    std::error_code ec;
    const auto space = fs::space(folder, ec);
    if (ec) return;  // nothing to judge by: the write itself will say
    available = static_cast<std::int64_t>(space.available);
  }
  std::error_code ec;
  const bool exists = fs::is_regular_file(file, ec);
  const std::int64_t copies = exists || writes == 1 ? 1 : 2;
  const std::int64_t need = copies * bytes;
  if (available >= need) return;
  const std::string what =
      copies == 1 ? fmt::format("a checkpoint is {}", format_bytes(bytes))
                  : fmt::format(
                        "each is {} and two exist while one replaces the last (written beside it, then "
                        "renamed over it): {} in all",
                        format_bytes(bytes), format_bytes(need));
  throw ResourceError(fmt::format(
      "not enough disk space for the checkpoints in {}: {}, but {} is free; free some space, write elsewhere "
      "with -o, or shrink the covariance (kf_blocksize, p_precision float32; deepkf plan shows the sizes)",
      folder.string(), what, format_bytes(available)));
}

}  // namespace deepkf
