#pragma once
// What each stage of an online-learning iteration leaves in its summary.json (iter.NNN/STAGE/summary.json),
// as types: the loop writes them when a stage ends, reads them back when a later stage or a resumed loop
// needs them, and makes iterations.jsonl from them (IterationRecord.hpp). The files keep their keys, so
// folders written by earlier versions resume; keys added since read with their defaults.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/data/System.hpp"
#include "src/learn/Exploration.hpp"
#include "src/learn/Labelling.hpp"

namespace deepkf {

// A model's errors on a set of frames: energy per atom (eV/atom), force components (eV/A), virial per atom.
struct ErrorRecord {
  std::int64_t frames = 0;
  double rmse_e = 0.0;
  double rmse_f = 0.0;
  std::optional<double> rmse_v;  // when the frames have virials
};

// A member trained again from its previous weights after diverging (LearningLoop::reset_diverged).
struct MemberReset {
  double diverged_rmse_f = 0.0;  // the diverged run's training force RMSE
  double previous_rmse_f = 0.0;  // the member's before this round
  std::string kept;              // the folder the diverged run was moved to
};

struct MemberRecord {
  std::string model;       // model file
  std::string checkpoint;  // the run's checkpoint, which the next round continues
  std::int64_t steps = 0;
  double wall_s = 0.0;
  std::optional<double> train_rmse_f;  // absent in summaries written before divergence resets
  std::optional<MemberReset> reset;
};

struct TrainRecord {
  std::int64_t numb_steps = 0;            // the step every member trained to
  std::vector<std::string> label_groups;  // labels.h5 groups among the training data
  std::vector<MemberRecord> members;
  ErrorRecord train_errors;                // model 0 on every training frame
  std::optional<ErrorRecord> test_errors;  // model 0 on the loop's test data
  double wall_s = 0.0;
};

struct ExploreRecord {
  std::vector<ExplorationRun> runs;
  double wall_s = 0.0;
};

// What became of one exploration run's frames in the select stage.
struct RunNote {
  std::string dir;
  std::int64_t frames = 0;  // frames scored
  std::string note;         // why none were, when so
};

// A frame chosen for labelling: its atoms (frame_json of Selection.hpp) and where it came from.
struct SelectedFrame {
  nlohmann::json atoms;  // type_map, atom_types, coord, box
  std::string run;       // the exploration run's folder
  std::string start;     // the run's start structure
  std::int64_t step = 0;
  double score = 0.0;

  System system() const;  // the one-frame System, named after its run
};

struct SelectRecord {
  std::string score;             // the scorer's description
  double reference_level = 0.0;  // with select.relative, the level the window is relative to; else 0
  double trust_lo = 0.0, trust_hi = 0.0;
  std::int64_t explored = 0, accurate = 0, candidate = 0, failed = 0;
  double candidate_fraction = 0.0;
  std::vector<RunNote> runs;
  std::vector<SelectedFrame> frames;
};

// One selected frame's CP2K result, in the order of SelectRecord::frames.
struct LabelledFrameRecord {
  LabelOutcome outcome;
  std::string dir;  // the frame's CP2K folder
};

struct LabelRecord {
  int labelled = 0, label_failed = 0;
  double label_cp2k_s = 0.0;  // summed over the CP2K runs
  double label_wall_s = 0.0;  // the stage
  std::vector<LabelledFrameRecord> frames;
};

nlohmann::json to_json(const TrainRecord& r);
nlohmann::json to_json(const ExploreRecord& r);
nlohmann::json to_json(const SelectRecord& r);
nlohmann::json to_json(const LabelRecord& r);
nlohmann::json to_json(const ErrorRecord& r);

// Each record from its summary.json's contents; DataError naming `file` and the key when one is missing or
// of the wrong type.
TrainRecord train_record(const nlohmann::json& j, const std::string& file);
ExploreRecord explore_record(const nlohmann::json& j, const std::string& file);
SelectRecord select_record(const nlohmann::json& j, const std::string& file);
LabelRecord label_record(const nlohmann::json& j, const std::string& file);

}  // namespace deepkf
