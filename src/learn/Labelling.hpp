#pragma once
// The label stage of an online-learning iteration: one CP2K single point per selected frame, in its own
// folder (in.inp from the template, out.log, result.json), label.jobs at once. result.json is written
// (atomically) as soon as a frame's run ends, with its labels or why it failed, so a loop stopped at any
// moment keeps every finished label; on resume a frame with a result.json is not run again. A failed run
// (non-zero exit, time limit, unconverged SCF, an output that does not parse) is recorded and skipped.
#include <spdlog/logger.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/data/System.hpp"
#include "src/learn/Cp2kInput.hpp"
#include "src/learn/Cp2kOutput.hpp"
#include "src/learn/LearnConfig.hpp"

namespace deepkf {

struct LabelOutcome {
  bool ok = false;
  std::string failure;  // when not ok
  Cp2kLabels labels;    // when ok
  double wall_s = 0.0;  // CP2K's run time
  bool reused = false;  // read from an earlier result.json
};

// {"ok", "wall_s", and "energy", "force", "virial" (DeePMD units) or "failure"}: result.json, and a frame's
// entry in the label summary; and back (marked reused).
nlohmann::json outcome_json(const LabelOutcome& o);
LabelOutcome outcome_from_json(const nlohmann::json& j);

// Labels frames[i] (each a one-frame periodic System) in dir/frame_NNN. Returns one outcome per frame.
std::vector<LabelOutcome> label_frames(const LearnConfig& cfg, const Cp2kTemplate& input,
                                       const std::vector<System>& frames, const std::string& dir,
                                       spdlog::logger& log);

}  // namespace deepkf
