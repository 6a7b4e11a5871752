#include "src/eval/Ensemble.hpp"

#include <fmt/format.h>

#include "src/core/Error.hpp"

namespace deepkf {

Ensemble Ensemble::load(const std::vector<std::string>& paths, const std::string& device) {
  std::vector<Potential> members;
  members.reserve(paths.size());
  for (const auto& path : paths) members.emplace_back(path, device);
  return Ensemble(std::move(members));
}

std::vector<PotentialResult> Ensemble::evaluate(const System& system, const std::vector<std::int64_t>& frames,
                                                const PotentialOptions& options,
                                                const std::vector<std::int64_t>& numbers) const {
  std::vector<PotentialResult> results;
  results.reserve(members_.size());
  for (std::size_t m = 0; m < members_.size(); ++m) {
    try {
      results.push_back(members_[m].evaluate(system, frames, options, numbers));
    } catch (const ModelError& e) {
      const auto& name = members_[m].path();
      throw ModelError(fmt::format("model {} of the ensemble{}: {}", m + 1,
                                   name.empty() ? "" : " (" + name + ")", e.what()));
    }
  }
  return results;
}

}  // namespace deepkf
