#pragma once
// Several models evaluated on the same frames: the ensemble behind the model deviation (`deepkf
// model-devi`, `deepkf uncertainty`). Each member keeps its own precision, neighbour list (rcut, sel) and
// type map; a stored system's elements are matched to each member's by name.
#include <cstddef>
#include <string>
#include <vector>

#include "src/eval/Potential.hpp"

namespace deepkf {

class Ensemble {
 public:
  explicit Ensemble(std::vector<Potential> members) : members_(std::move(members)) {}
  // The model files at `paths`, on `device` (Potential's errors).
  static Ensemble load(const std::vector<std::string>& paths, const std::string& device = "cpu");

  std::size_t size() const { return members_.size(); }
  const Potential& operator[](std::size_t m) const { return members_.at(m); }

  // One result per member, in order (Potential::evaluate's arguments). Throws Potential::evaluate's errors, a
  // ModelError naming the member (its number and file) as well as the frame.
  std::vector<PotentialResult> evaluate(const System& system, const std::vector<std::int64_t>& frames,
                                        const PotentialOptions& options = {},
                                        const std::vector<std::int64_t>& numbers = {}) const;

 private:
  std::vector<Potential> members_;
};

}  // namespace deepkf
