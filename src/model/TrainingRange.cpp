#include "src/model/TrainingRange.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

}  // namespace

TrainingRange::TrainingRange(int ntypes)
    : ntypes_(ntypes),
      distances_(static_cast<std::size_t>(ntypes) * static_cast<std::size_t>(ntypes), kNone) {}

double TrainingRange::min_distance(int c, int t) const {
  if (empty()) return kNone;
  return distances_[static_cast<std::size_t>(c) * static_cast<std::size_t>(ntypes_) +
                    static_cast<std::size_t>(t)];
}

void TrainingRange::add(const std::vector<double>& d, double frames) {
  if (d.size() != distances_.size()) {
    throw ModelError("training range: " + std::to_string(d.size()) + " distances for " +
                     std::to_string(ntypes_) + " types");
  }
  for (std::size_t k = 0; k < d.size(); ++k) distances_[k] = std::min(distances_[k], d[k]);
  frames_ += frames;
}

void TrainingRange::merge(const TrainingRange& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  if (other.ntypes_ != ntypes_) {
    throw ModelError("training range: cannot merge " + std::to_string(other.ntypes_) + " types into " +
                     std::to_string(ntypes_));
  }
  add(other.distances_, other.frames_);
}

nlohmann::json TrainingRange::to_json() const {
  if (empty()) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  for (int c = 0; c < ntypes_; ++c) {
    nlohmann::json row = nlohmann::json::array();
    for (int t = 0; t < ntypes_; ++t) {
      if (seen(c, t)) {
        row.push_back(min_distance(c, t));
      } else {
        row.push_back(nullptr);
      }
    }
    rows.push_back(row);
  }
  return {{"min_distance", rows}, {"frames", frames_}};
}

TrainingRange TrainingRange::from_json(const nlohmann::json& j, int ntypes, const std::string& where) {
  if (j.is_null()) return {};
  const auto bad = [&](const std::string& what) {
    return ModelError(where + ": training_range " + what + ", got " + j.dump());
  };
  if (!j.is_object() || !j.contains("min_distance") || !j["min_distance"].is_array() ||
      j["min_distance"].size() != static_cast<std::size_t>(ntypes)) {
    throw bad("must hold min_distance, " + std::to_string(ntypes) + " rows of " + std::to_string(ntypes) +
              " distances (A)");
  }
  TrainingRange r(ntypes);
  std::vector<double> d(r.distances_.size(), kNone);
  for (int c = 0; c < ntypes; ++c) {
    const auto& row = j["min_distance"][static_cast<std::size_t>(c)];
    if (!row.is_array() || row.size() != static_cast<std::size_t>(ntypes))
      throw bad("row " + std::to_string(c) + " is malformed");
    for (int t = 0; t < ntypes; ++t) {
      const auto& v = row[static_cast<std::size_t>(t)];
      if (v.is_null()) continue;
      if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>()))
        throw bad("entry [" + std::to_string(c) + "][" + std::to_string(t) + "] is not a positive distance");
      d[static_cast<std::size_t>(c * ntypes + t)] = v.get<double>();
    }
  }
  const auto frames = j.find("frames");
  if (frames != j.end() && !frames->is_number()) throw bad("frames is not a number");
  r.add(d, frames == j.end() ? 0.0 : frames->get<double>());
  return r;
}

}  // namespace deepkf
