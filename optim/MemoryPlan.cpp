#include "optim/MemoryPlan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "optim/BlockLayout.hpp"
#include "optim/PackedSweep.hpp"
#include "optim/PackedTiles.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"

namespace deepkf {

namespace {

struct Choice {
  std::int64_t blocksize;
  std::string precision;
};

std::int64_t precision_bytes(const std::string& precision) { return precision == "float32" ? 4 : 8; }

std::int64_t parameters(const MemoryNeed& need) {
  std::int64_t n = 0;
  for (const auto& shape : need.shapes)
    n += std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  return n;
}

// P on the rank holding most; on a GPU with the sweep's partial sums, 2 ceil(n / 128) n float64 values per
// block of n (optim/PackedTiles.hpp): 3% of a float64 P at kf_blocksize 5120.
std::int64_t covariance_bytes(const MemoryNeed& need, const Choice& c, int nranks) {
  const BlockLayout layout(need.shapes, c.blocksize);
  const auto owners = block_owners(layout, nranks);
  const bool gpu = need.where != "host";
  std::vector<std::int64_t> per_rank(static_cast<std::size_t>(nranks), 0);
  for (std::size_t i = 0; i < owners.size(); ++i) {
    const auto n = layout.blocks()[i].size();
    auto bytes = packed::triangle_size(n) * precision_bytes(c.precision);
    if (gpu) bytes += 2 * packed::tiles_of(n) * n * 8 * need.measurements;
    per_rank[static_cast<std::size_t>(owners[i])] += bytes;
  }
  return *std::max_element(per_rank.begin(), per_rank.end());
}

// A joint update's float64 values per measurement beyond its gradient: its columns of H, Y, the pending U
// and the zero U of a sweep with none pending (kJointValuesPerWeight per weight), and on the CPU the
// sweep's partial sums, sum over the row chunks of each block of n - r0 (PackedSweep.hpp, row_chunks).
std::int64_t joint_values(const MemoryNeed& need, std::int64_t blocksize) {
  std::int64_t values = kJointValuesPerWeight * parameters(need);
  if (need.where != "host") return values;
  const BlockLayout layout(need.shapes, blocksize);
  for (const auto& block : layout.blocks()) {
    const auto rows = packed::row_chunks(block.size());
    for (std::size_t k = 0; k + 1 < rows.size(); ++k) values += block.size() - rows[k];
  }
  return values;
}

// Weights and their gradient in the model's precision, h, K and the pending K in float64, one batch; a
// joint update's m gradients and float64 vectors.
std::int64_t other_bytes(const MemoryNeed& need, std::int64_t blocksize) {
  const std::int64_t n = parameters(need);
  const std::int64_t joint =
      need.measurements > 1 ? need.measurements * (n * need.value_bytes + 8 * joint_values(need, blocksize))
                            : 0;
  return 2 * n * need.value_bytes + 4 * n * 8 + joint + need.batch_bytes;
}

std::vector<Choice> ladder() {
  std::vector<Choice> out;
  for (const char* p : {"float64", "float32"})
    for (const std::int64_t b : {5120, 4096, 3072, 2048}) out.push_back({b, p});
  for (const std::int64_t b : {1024, 512, 256})
    for (const char* p : {"float64", "float32"}) out.push_back({b, p});
  return out;
}

std::string label(const Choice& c) { return fmt::format("kf_blocksize {}, {}", c.blocksize, c.precision); }

}  // namespace

bool fits_in_memory(std::int64_t bytes, std::int64_t available) {
  return available < 0 || static_cast<double>(bytes) <= 0.9 * static_cast<double>(available);
}

std::string MemoryPlan::describe() const {
  return fmt::format(
      "memory plan: kf_blocksize {}, {} covariance: {} + {} (weights, filter vectors, one batch) "
      "per rank, {} available ({})",
      blocksize, p_precision, format_bytes(covariance_bytes), format_bytes(other_bytes),
      available < 0 ? std::string("unknown") : format_bytes(available), where);
}

MemoryPlan plan_memory(const MemoryNeed& need, std::int64_t blocksize, const std::string& precision,
                       std::int64_t max_blocksize) {
  std::vector<Choice> candidates;
  for (const auto& c : ladder()) {
    if (blocksize > 0 && c.blocksize != blocksize) continue;
    if (blocksize == 0 && max_blocksize > 0 && c.blocksize > max_blocksize) continue;
    if (precision != "auto" && c.precision != precision) continue;
    candidates.push_back(c);
  }
  if (candidates.empty()) candidates.push_back({blocksize, precision == "auto" ? "float64" : precision});
  for (const auto& c : candidates) {
    const std::int64_t cov = covariance_bytes(need, c, need.nranks);
    const std::int64_t other = other_bytes(need, c.blocksize);
    if (fits_in_memory(cov + other, need.available))
      return {c.blocksize, c.precision, cov, other, need.available, need.where};
  }

  // Nothing asked for fits: the need, and what would.
  const Choice& asked = candidates.front();
  const std::int64_t cov = covariance_bytes(need, asked, need.nranks);
  const std::int64_t other = other_bytes(need, asked.blocksize);
  std::vector<std::string> options;
  for (const auto& c : ladder()) {
    const std::int64_t total = covariance_bytes(need, c, need.nranks) + other_bytes(need, c.blocksize);
    if (fits_in_memory(total, need.available)) {
      options.push_back(fmt::format("{} ({})", label(c), format_bytes(total)));
      break;
    }
  }
  for (int np = need.nranks + 1; np <= 1024; np *= 2) {
    const std::int64_t total = covariance_bytes(need, asked, np) + other;
    if (fits_in_memory(total, need.available)) {
      options.push_back(fmt::format("{} with {} ranks, each with this much memory ({} per rank)",
                                    label(asked), np, format_bytes(total)));
      break;
    }
  }
  std::string text;
  for (std::size_t i = 0; i < options.size(); ++i)
    text += (i == 0 ? "" : i + 1 == options.size() ? ", or " : ", ") + options[i];
  throw ResourceError(fmt::format(
      "not enough memory: {} needs {} of covariance + {} (weights, filter vectors, one batch) per rank, "
      "{} available ({}, 90 % usable){}",
      label(asked), format_bytes(cov), format_bytes(other), format_bytes(need.available), need.where,
      options.empty() ? std::string("; no kf_blocksize or precision fits: use a smaller model")
                      : "; these fit: " + text));
}

std::int64_t batch_activation_bytes(std::int64_t frames, std::int64_t natoms, std::int64_t slots,
                                    const std::vector<int>& embedding_widths, std::int64_t value_bytes,
                                    std::int64_t copies) {
  const std::int64_t width =
      std::accumulate(embedding_widths.begin(), embedding_widths.end(), std::int64_t{0}) + 7;
  return copies * frames * natoms * slots * width * value_bytes;
}

}  // namespace deepkf
