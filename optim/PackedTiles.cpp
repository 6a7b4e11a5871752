#include "optim/PackedTiles.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace deepkf::packed {

TilePlan plan_tiles(const std::vector<std::int64_t>& sizes) {
  TilePlan plan;
  std::int64_t offset = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    const auto n = sizes[j];
    if (n <= 0) throw std::invalid_argument("plan_tiles: block " + std::to_string(j) + " is empty");
    plan.blocks.push_back({n, offset, plan.workspace});
    const auto t = tiles_of(n);
    if (t > std::numeric_limits<std::int32_t>::max())
      throw std::invalid_argument("plan_tiles: block " + std::to_string(j) + " is too large");
    for (std::int64_t I = 0; I < t; ++I)
      for (std::int64_t J = I; J < t; ++J)
        plan.tiles.push_back({static_cast<std::int32_t>(j), static_cast<std::int32_t>(I),
                              static_cast<std::int32_t>(J)});
    offset += n;
    plan.workspace += 2 * t * n;
  }
  if (plan.tiles.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument("plan_tiles: more tiles than one kernel launch takes");
  return plan;
}

}  // namespace deepkf::packed
