#include "src/learn/LearningLoop.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/eval/LabelledErrors.hpp"
#include "src/learn/Cp2kInput.hpp"
#include "src/learn/EnsembleTraining.hpp"
#include "src/learn/Exploration.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "src/learn/FrameScorer.hpp"
#include "src/learn/IterationRecord.hpp"
#include "src/learn/LabelStore.hpp"
#include "src/learn/Labelling.hpp"
#include "src/learn/Selection.hpp"
#include "src/learn/StageRecords.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/TrainConfig.hpp"
#include "src/train/TrainingLog.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kStateFile = "learn.state.json";
constexpr const char* kLabelFile = "labels.h5";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool before(Stage done, Stage s) { return static_cast<int>(done) < static_cast<int>(s); }

// A model's errors on every frame of `paths` (energy and virial per atom, force components).
ErrorRecord errors_of(const std::string& model_path, const std::vector<std::string>& paths) {
  const LoadedModel model = load_model(model_path);
  const Dataset data = Dataset::load(paths, model.config.type_map);
  const LabelledErrors r = labelled_errors(model, data, 8);
  ErrorRecord e{r.total_frames, r.total.rmse_e(), r.total.rmse_f(), std::nullopt};
  if (r.total.has_virial()) e.rmse_v = r.total.rmse_v();
  return e;
}

std::shared_ptr<spdlog::logger> open_log(const std::string& file) {
  std::vector<spdlog::sink_ptr> sinks{
      make_console_sink(), std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, /*truncate=*/false)};
  auto log = std::make_shared<spdlog::logger>("deepkf-learn", sinks.begin(), sinks.end());
  log->set_pattern("[%Y-%m-%d %H:%M:%S] %v");
  log->flush_on(spdlog::level::info);  // everything up to a kill -9 is in learn.log
  return log;
}

}  // namespace

LearningLoop::LearningLoop(LearnConfig cfg, std::string dir) : cfg_(std::move(cfg)), dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) throw Error("cannot create the output folder " + dir_);
  dir_ = fs::absolute(dir_).lexically_normal().string();
  // Everything that can be wrong with the inputs shows now, not after the first training.
  const TrainConfig train = TrainConfig::from_file(cfg_.train.input);
  user_systems_ = resolve_system_paths(train.training_data.systems, train.base_dir,
                                       "training.training_data.systems", train.file);
  // Probabilities by system index would leave the systems each round appends with whatever share is left.
  const DataSection& d = train.training_data;
  if (!d.sys_probs.empty() || d.auto_prob.find(';') != std::string::npos) {
    throw ConfigError(
        "'training.training_data." + std::string(d.sys_probs.empty() ? "auto_prob" : "sys_probs") + "' in " +
        train.file +
        " gives probabilities by system index, which deepkf learn cannot use: each round adds the "
        "labelled frames as systems of their own, weighed by train.new_frame_repeat; remove it");
  }
  cp2k_input_ = std::make_unique<Cp2kTemplate>(cfg_.label.template_path, cfg_.label.kinds,
                                               cfg_.label.kpoint_spacing, "label in " + cfg_.file);
  scorer_ = make_frame_scorer(cfg_.select, cfg_.seed);
  find_program(cfg_.explore.lmp, cfg_.base_dir, "explore.lmp", cfg_.file);
  find_program(cfg_.label.cp2k, cfg_.base_dir, "label.cp2k", cfg_.file);
  if (!cfg_.train.deepkf.empty()) find_program(cfg_.train.deepkf, cfg_.base_dir, "train.deepkf", cfg_.file);
  if (cfg_.train.ranks > 1) find_program(cfg_.train.mpirun, cfg_.base_dir, "train.mpirun", cfg_.file);
  if (cfg_.explore.ranks > 1) find_program(cfg_.explore.mpirun, cfg_.base_dir, "explore.mpirun", cfg_.file);
  if (cfg_.label.ranks > 1) find_program(cfg_.label.mpirun, cfg_.base_dir, "label.mpirun", cfg_.file);
  find_lammps_plugin(cfg_);
  state_ = LoopState::read(path(kStateFile));
  log_ = open_log(path("learn.log"));
}

LearningLoop::~LearningLoop() = default;

std::string LearningLoop::path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

std::string LearningLoop::stage_dir(int iteration, Stage stage) const {
  return (fs::path(dir_) / iteration_group(iteration) / stage_name(stage)).string();
}

std::string LearningLoop::summary_file(int iteration, Stage stage) const {
  return (fs::path(stage_dir(iteration, stage)) / "summary.json").string();
}

std::optional<json> LearningLoop::summary(int iteration, Stage stage) const {
  const std::string file = summary_file(iteration, stage);
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::ifstream in(file);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw DataError("cannot read " + file + ": " + e.what());
  }
}

json LearningLoop::required_summary(int iteration, Stage stage) const {
  auto j = summary(iteration, stage);
  if (!j) {
    throw DataError(
        fmt::format("{} is missing: iteration {} needs its {} stage's record (learn.state.json says "
                    "the stage is done; run the loop in a new folder or restore the file)",
                    summary_file(iteration, stage), iteration, stage_name(stage)));
  }
  return *j;
}

TrainRecord LearningLoop::trained(int i) const {
  return train_record(required_summary(i, Stage::kTrain), summary_file(i, Stage::kTrain));
}

ExploreRecord LearningLoop::explored(int i) const {
  return explore_record(required_summary(i, Stage::kExplore), summary_file(i, Stage::kExplore));
}

SelectRecord LearningLoop::selected(int i) const {
  return select_record(required_summary(i, Stage::kSelect), summary_file(i, Stage::kSelect));
}

template <class Record>
std::optional<Record> LearningLoop::record_of(int iteration, Stage stage,
                                              Record (*read)(const json&, const std::string&)) const {
  const auto j = summary(iteration, stage);
  if (!j) return std::nullopt;
  return read(*j, summary_file(iteration, stage));
}

std::optional<LabelRecord> LearningLoop::labelled(int i) const {
  return record_of(i, Stage::kLabel, label_record);
}

void LearningLoop::finish(int iteration, Stage stage, const json& s) {
  if (!s.is_null()) {
    fs::create_directories(stage_dir(iteration, stage));
    write_text_atomically((fs::path(stage_dir(iteration, stage)) / "summary.json").string(),
                          s.dump(1) + "\n");
  }
  state_.iteration = iteration;
  state_.done = stage;
  state_.write(path(kStateFile));
}

std::string LearningLoop::run() {
  if (!state_.stopped.empty()) {
    // A loop that ran out of iterations goes on when loop.json now allows more: its last round's selection
    // is labelled after all.
    const int i = state_.iteration;
    if (i < cfg_.iterations && state_.done == Stage::kRecord && !labelled(i) && !converged(i)) {
      log_->info("iterations raised to {}: labelling the frames iteration {} selected, then going on",
                 cfg_.iterations, i);
      state_.stopped.clear();
      state_.done = Stage::kSelect;
      state_.write(path(kStateFile));
    } else {
      log_->info("the loop in {} has already stopped: {}", dir_, state_.stopped);
      return state_.stopped;
    }
  }
  log_->info("deepkf learn {} in {}: iteration {}, after stage {}", cfg_.file, dir_, state_.iteration,
             stage_name(state_.done));
  for (;;) {
    const int i = state_.iteration;
    const bool last = i >= cfg_.iterations;
    if (before(state_.done, Stage::kTrain)) train(i);
    if (before(state_.done, Stage::kExplore)) explore(i);
    if (before(state_.done, Stage::kSelect)) select(i);
    const bool stop = last || converged(i);
    if (before(state_.done, Stage::kLabel)) {
      if (stop) {
        finish(i, Stage::kLabel, json());  // the last round labels nothing
      } else {
        label(i);
      }
    }
    if (before(state_.done, Stage::kRecord)) record(i);
    if (stop) {
      const double fraction = selected(i).candidate_fraction;
      state_.stopped =
          last
              ? fmt::format("{} labelling iterations done (iterations = {}); candidate fraction now {:.4f}",
                            i, cfg_.iterations, fraction)
              : fmt::format(
                    "the candidate fraction of iteration {} ({:.4f}) is below stop_candidate_fraction ({:g})",
                    i, fraction, cfg_.stop_candidate_fraction);
      state_.write(path(kStateFile));
      log_->info("stopped: {}", state_.stopped);
      return state_.stopped;
    }
    state_.iteration = i + 1;
    state_.done = Stage::kNone;
    state_.write(path(kStateFile));
  }
}

bool LearningLoop::converged(int iteration) const {
  return cfg_.stop_candidate_fraction > 0.0 &&
         selected(iteration).candidate_fraction < cfg_.stop_candidate_fraction;
}

// A continued filter can diverge (docs/online-learning.md, "Known limits"): a member whose training force
// RMSE exceeds reset_factor times its previous round's is trained again from its previous weights with a
// fresh covariance, and the diverged run is kept beside it. Updates members and errors; one record per
// member, null for those kept.
std::vector<std::optional<MemberReset>> LearningLoop::reset_diverged(
    int i, TrainingRound& round, std::vector<TrainedMember>& members, std::vector<ErrorRecord>& errors,
    const std::vector<std::string>& training) {
  std::vector<std::optional<MemberReset>> resets(members.size());
  const TrainRecord previous = trained(i - 1);
  round.restart_from.assign(members.size(), "");
  for (std::size_t k = 0; k < members.size(); ++k) {
    if (k >= previous.members.size())
      throw DataError(fmt::format("{} has {} members, the loop trains {}", summary_file(i - 1, Stage::kTrain),
                                  previous.members.size(), members.size()));
    const MemberRecord& before = previous.members[k];
    const double was = before.train_rmse_f.value_or(previous.train_errors.rmse_f);
    const double now = errors[k].rmse_f;
    if (now <= cfg_.train.reset_factor * was) continue;  // a nan is a divergence too
    const fs::path dir = fs::path(round.dir) / fmt::format("model_{}", k);
    const fs::path kept = fs::path(round.dir) / fmt::format("model_{}.diverged", k);
    log_->warn(
        "train: member {} diverged (training force RMSE {:.4g} eV/A, {:.4g} before; reset_factor {:g}): "
        "trained again from {} with a fresh covariance; the diverged run is kept in {}",
        k, now, was, cfg_.train.reset_factor, before.model, kept.string());
    fs::remove_all(kept);
    fs::rename(dir, kept);
    round.restart_from[k] = before.model;
    resets[k] = MemberReset{now, was, kept.string()};
  }
  if (std::any_of(resets.begin(), resets.end(), [](const auto& r) { return r.has_value(); })) {
    members = train_ensemble(cfg_, round, *log_);  // only the reset members train: the others are done
    for (std::size_t k = 0; k < members.size(); ++k)
      if (resets[k]) errors[k] = errors_of(members[k].model, training);
  }
  return resets;
}

void LearningLoop::train(int i) {
  const auto start = std::chrono::steady_clock::now();
  TrainingRound round;
  round.dir = stage_dir(i, Stage::kTrain);
  for (int j = 0; j < i; ++j) {
    const auto l = labelled(j);
    if (l && l->labelled > 0) round.label_groups.push_back(path(kLabelFile) + "#/" + iteration_group(j));
  }
  if (i == 0) {
    round.numb_steps = cfg_.train.init_steps;
  } else {
    const TrainRecord previous = trained(i - 1);
    round.numb_steps = previous.numb_steps + cfg_.train.steps;
    for (const auto& m : previous.members) round.checkpoints.push_back(m.checkpoint);
  }
  log_->info("iteration {}: train {} models to step {} on the user's data and {} labelled iterations", i,
             cfg_.train.models, round.numb_steps, round.label_groups.size());
  auto members = train_ensemble(cfg_, round, *log_);
  // The errors of every member on all training frames (model 0's also drives the exploration).
  std::vector<std::string> training = user_systems_;
  training.insert(training.end(), round.label_groups.begin(), round.label_groups.end());
  std::vector<ErrorRecord> errors;
  for (const auto& m : members) errors.push_back(errors_of(m.model, training));
  const auto resets = i > 0 && cfg_.train.reset_factor > 0.0
                          ? reset_diverged(i, round, members, errors, training)
                          : std::vector<std::optional<MemberReset>>(members.size());
  TrainRecord s;
  s.numb_steps = round.numb_steps;
  s.label_groups = round.label_groups;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const auto& m = members[k];
    s.members.push_back({m.model, m.checkpoint, m.steps, m.wall_s, errors[k].rmse_f, resets[k]});
  }
  s.train_errors = errors.front();
  if (!cfg_.test_data.empty()) s.test_errors = errors_of(members.front().model, cfg_.test_data);
  s.wall_s = seconds_since(start);
  log_->info("iteration {}: model 0: training force RMSE {:.4f} eV/A{}", i, s.train_errors.rmse_f,
             s.test_errors ? fmt::format(", test {:.4f} eV/A", s.test_errors->rmse_f) : "");
  finish(i, Stage::kTrain, to_json(s));
}

void LearningLoop::explore(int i) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> models;
  for (const auto& m : trained(i).members) models.push_back(m.model);
  log_->info("iteration {}: explore", i);
  ExploreRecord s;
  s.runs = deepkf::explore(cfg_, i, stage_dir(i, Stage::kExplore), models, *log_);
  s.wall_s = seconds_since(start);
  finish(i, Stage::kExplore, to_json(s));
}

void LearningLoop::select(int i) {
  std::vector<std::string> checkpoints;
  for (const auto& m : trained(i).members) checkpoints.push_back(m.checkpoint);
  scorer_->use_models(checkpoints);
  const SelectRecord s = select_stage(cfg_, i, explored(i).runs, *scorer_, state_.reference_level,
                                      stage_dir(i, Stage::kSelect), *log_);
  finish(i, Stage::kSelect, to_json(s));
}

void LearningLoop::label(int i) {
  const auto start = std::chrono::steady_clock::now();
  const SelectRecord chosen = selected(i);
  std::vector<System> frames;
  for (const auto& f : chosen.frames) frames.push_back(f.system());
  log_->info("iteration {}: label {} frames with CP2K", i, frames.size());
  const std::string dir = stage_dir(i, Stage::kLabel);
  const auto outcomes = label_frames(cfg_, *cp2k_input_, frames, dir, *log_);
  LabelRecord s;
  for (std::size_t k = 0; k < outcomes.size(); ++k) {
    const LabelOutcome& o = outcomes[k];
    s.frames.push_back({o, (fs::path(dir) / fmt::format("frame_{:03d}", k)).string()});
    ++(o.ok ? s.labelled : s.label_failed);
    s.label_cp2k_s += o.wall_s;
  }
  s.label_wall_s = seconds_since(start);

  // labels.h5 again from every iteration's labelled frames, this one's included.
  std::vector<std::pair<int, std::vector<LabelledFrame>>> all;
  for (int j = 0; j <= i; ++j) {
    const auto lab = j == i ? std::optional<LabelRecord>(s) : labelled(j);
    if (!lab) continue;
    const SelectRecord sel = j == i ? chosen : selected(j);
    if (sel.frames.size() != lab->frames.size())
      throw DataError(fmt::format("{} has {} frames where {} selected {}", summary_file(j, Stage::kLabel),
                                  lab->frames.size(), summary_file(j, Stage::kSelect), sel.frames.size()));
    std::vector<LabelledFrame> frames_j;
    for (std::size_t k = 0; k < lab->frames.size(); ++k) {
      const LabelledFrameRecord& l = lab->frames[k];
      if (!l.outcome.ok) continue;
      const SelectedFrame& f = sel.frames[k];
      System frame = f.system();
      frame.energy = {l.outcome.labels.energy};
      frame.force = l.outcome.labels.force;
      frame.virial.assign(l.outcome.labels.virial.begin(), l.outcome.labels.virial.end());
      const json provenance{{"iteration", j},    {"run", f.run},
                            {"start", f.start},  {"step", f.step},
                            {"score", f.score},  {"score_name", sel.score},
                            {"cp2k_dir", l.dir}, {"cp2k_wall_s", l.outcome.wall_s}};
      frames_j.push_back({std::move(frame), provenance});
    }
    all.emplace_back(j, std::move(frames_j));
  }
  write_label_file(path(kLabelFile), all);
  log_->info("iteration {}: {} frames labelled, {} failed; {} written", i, s.labelled, s.label_failed,
             path(kLabelFile));
  finish(i, Stage::kLabel, to_json(s));
}

void LearningLoop::record(int i) {
  std::string lines;
  std::vector<json> records;
  for (int j = 0; j <= i; ++j) {
    records.push_back(iteration_record(j, record_of(j, Stage::kTrain, train_record),
                                       record_of(j, Stage::kExplore, explore_record),
                                       record_of(j, Stage::kSelect, select_record), labelled(j)));
    lines += records.back().dump() + "\n";
  }
  write_text_atomically(path("iterations.jsonl"), lines);
  write_text_atomically(path("iterations.svg"), records_svg(records));
  log_->info("iteration {}: {}", i, records.back().dump());
  finish(i, Stage::kRecord, json());
}

}  // namespace deepkf
