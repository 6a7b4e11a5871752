#pragma once
// The select stage of an online-learning iteration: read the frames every exploration run dumped, score them
// (FrameScorer), sort them by the trust window and pick the frames to label (FrameSelection.hpp). Its summary
// (select/summary.json) holds the counts and the chosen frames themselves, coordinates included, so that the
// label stage, also after a restart, labels exactly these frames; select/scores.tsv lists every frame's
// score.
#include <spdlog/logger.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/data/System.hpp"
#include "src/learn/Exploration.hpp"
#include "src/learn/FrameScorer.hpp"
#include "src/learn/LearnConfig.hpp"
#include "src/learn/StageRecords.hpp"

namespace deepkf {

// Scores and picks the frames of `runs` into `dir`. The window is [trust_lo, trust_hi), or, with
// select.relative, those times `reference_level`: when reference_level is 0 (the first selection) it is set
// to the median score of these runs. Returns the stage's record (StageRecords.hpp).
// A failed run's frames are scored when its files allow; a run that finished but cannot be scored is an
// error (DataError naming the file).
SelectRecord select_stage(const LearnConfig& cfg, int iteration, const std::vector<ExplorationRun>& runs,
                          const FrameScorer& scorer, double& reference_level, const std::string& dir,
                          spdlog::logger& log);

// Frame f of `system` as JSON (type_map, atom_types, coord, box; labels when the system has them), and back
// (a one-frame System).
nlohmann::json frame_json(const System& system, std::int64_t f);
System frame_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace deepkf
