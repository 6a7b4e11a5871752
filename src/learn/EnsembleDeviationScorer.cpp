#include "src/learn/EnsembleDeviationScorer.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/Error.hpp"
#include "src/learn/LammpsInput.hpp"

namespace deepkf {

std::map<std::int64_t, double> read_max_force_deviation(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError("cannot open the model deviation file " + path);
  std::map<std::int64_t, double> out;
  std::int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t") == std::string::npos || line.find('#') == line.find_first_not_of(" \t"))
      continue;
    // step max_devi_v min_devi_v avg_devi_v max_devi_f min_devi_f avg_devi_f [per-atom ...]
    std::istringstream row(line);
    double step = 0.0, v[6];
    row >> step;
    for (double& x : v) row >> x;
    if (!row) {
      // The last line of a run that was stopped may be cut short.
      if (in.peek() == std::char_traits<char>::eof()) break;
      throw DataError(
          fmt::format("{} line {}: expected a step and 6 deviations, found '{}'", path, number, line));
    }
    out[static_cast<std::int64_t>(step)] = v[3];
  }
  return out;
}

std::vector<double> EnsembleDeviationScorer::score(const ExploredRun& run) const {
  const std::string path = (std::filesystem::path(run.dir) / kDeviationFile).string();
  const auto deviation = read_max_force_deviation(path);
  std::vector<double> scores;
  for (const auto step : run.trajectory.steps) {
    const auto it = deviation.find(step);
    if (it == deviation.end()) {
      throw DataError(
          fmt::format("{} has no row for step {}, which {} holds: the dump and the model deviation "
                      "must be written at the same steps",
                      path, step, run.trajectory.frames.source));
    }
    scores.push_back(it->second);
  }
  return scores;
}

}  // namespace deepkf
