#pragma once
// The record of an online-learning run: one JSON line per iteration in iterations.jsonl (what was explored,
// how the frames fell in the trust window, what was labelled and how long it took, the errors of the
// iteration's model on its training data and on the held-out test data) and a chart of these numbers over
// the iterations (iterations.svg).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/learn/StageRecords.hpp"

namespace deepkf {

// The line of one iteration from the records its stages wrote (none for a stage that did not run):
//   iteration, steps, train_wall_s, train_rmse_e/f/v (eV/atom, eV/A, eV/atom), train_frames, test_rmse_e/f/v,
//   test_frames (with test data), explore_runs, explore_failed_runs, explore_wall_s, score, trust_lo,
//   trust_hi, explored, accurate, candidate, failed, candidate_fraction, accurate_fraction,
//   failed_fraction, selected, labelled, label_failed,
//   label_wall_s (the stage), label_cp2k_s (summed over the CP2K runs).
nlohmann::json iteration_record(int iteration, const std::optional<TrainRecord>& train,
                                const std::optional<ExploreRecord>& explore,
                                const std::optional<SelectRecord>& select,
                                const std::optional<LabelRecord>& label);

// Three panels over the iterations: the fractions of explored frames that are accurate, candidates and
// failed; the force RMSE and the energy RMSE of each iteration's model on the training and test data.
std::string records_svg(const std::vector<nlohmann::json>& records);

}  // namespace deepkf
