#pragma once
// `deepkf learn`: online learning in one program. Each iteration
//   train    the ensemble, from scratch (or init models) in the first, continuing each member's RLEKF state
//            on the grown data in later ones (EnsembleTraining.hpp);
//   explore  LAMMPS MD with the models at the user's temperatures and pressures (Exploration.hpp);
//   select   score the dumped frames, sort them by the trust window, pick candidates (Selection.hpp);
//   label    CP2K single points of the picked frames, appended to labels.h5 (Labelling.hpp, LabelStore.hpp);
//   record   one line in iterations.jsonl and the chart iterations.svg (IterationRecord.hpp).
// The loop stops when the candidate fraction falls below stop_candidate_fraction, or after `iterations`
// labelling rounds, with a last round that trains, explores and selects (so its candidate fraction is
// measured) but labels nothing. learn.state.json (LoopState.hpp) records the last completed stage: the loop
// started again on the same folder resumes there, reusing finished members, MD runs and CP2K results.
//
// Folder layout: learn.state.json, learn.log, labels.h5, iterations.jsonl, iterations.svg, and per iteration
// iter.NNN/{train/model_K, explore/run_NNN, select, label/frame_NNN}, each stage with its summary.json.
#include <spdlog/logger.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/learn/EnsembleTraining.hpp"
#include "src/learn/LearnConfig.hpp"
#include "src/learn/LoopState.hpp"
#include "src/learn/StageRecords.hpp"

namespace deepkf {

class Cp2kTemplate;
class FrameScorer;

class LearningLoop {
 public:
  // Checks what can be checked before any work: the training input, the CP2K template, the programs (lmp,
  // cp2k, mpirun when ranks > 1) and the plugin. Throws ConfigError naming the file, key and value.
  LearningLoop(LearnConfig cfg, std::string dir);
  ~LearningLoop();
  LearningLoop(const LearningLoop&) = delete;
  LearningLoop& operator=(const LearningLoop&) = delete;

  // Runs (or resumes) until the loop stops; returns why ("candidate fraction ... below ...", "... iterations
  // done"). A loop that had already stopped returns at once with the same reason.
  std::string run();

 private:
  std::string path(const std::string& name) const;
  std::string stage_dir(int iteration, Stage stage) const;
  std::string summary_file(int iteration, Stage stage) const;
  // The stage's summary.json; nothing when the stage did not run (or wrote none: a last round's label).
  std::optional<nlohmann::json> summary(int iteration, Stage stage) const;
  // The same where the stage must have run: DataError naming the file when it is missing.
  nlohmann::json required_summary(int iteration, Stage stage) const;
  // The stage's record as `read` (StageRecords.hpp) makes it; nothing when the stage did not run.
  template <class Record>
  std::optional<Record> record_of(int iteration, Stage stage,
                                  Record (*read)(const nlohmann::json&, const std::string&)) const;
  TrainRecord trained(int iteration) const;
  ExploreRecord explored(int iteration) const;
  SelectRecord selected(int iteration) const;
  std::optional<LabelRecord> labelled(int iteration) const;
  void finish(int iteration, Stage stage, const nlohmann::json& summary);

  void train(int iteration);
  std::vector<std::optional<MemberReset>> reset_diverged(int iteration, TrainingRound& round,
                                                         std::vector<TrainedMember>& members,
                                                         std::vector<ErrorRecord>& errors,
                                                         const std::vector<std::string>& training);
  void explore(int iteration);
  void select(int iteration);
  void label(int iteration);
  void record(int iteration);
  // Whether the select stage of `iteration` found the candidate fraction below the stop threshold.
  bool converged(int iteration) const;

  LearnConfig cfg_;
  std::string dir_;
  LoopState state_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<Cp2kTemplate> cp2k_input_;
  std::unique_ptr<FrameScorer> scorer_;
  std::vector<std::string> user_systems_;  // the training input's systems, absolute
};

}  // namespace deepkf
