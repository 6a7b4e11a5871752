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
json errors_of(const std::string& model_path, const std::vector<std::string>& paths) {
  const LoadedModel model = load_model(model_path);
  const Dataset data = Dataset::load(paths, model.config.type_map);
  const LabelledErrors r = labelled_errors(model, data, 8);
  json e{{"frames", r.total_frames}, {"rmse_e", r.total.rmse_e()}, {"rmse_f", r.total.rmse_f()}};
  if (r.total.has_virial()) e["rmse_v"] = r.total.rmse_v();
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

json LearningLoop::summary(int iteration, Stage stage) const {
  const fs::path file = fs::path(stage_dir(iteration, stage)) / "summary.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return json::object();
  std::ifstream in(file);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw DataError("cannot read " + file.string() + ": " + e.what());
  }
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
    if (i < cfg_.iterations && state_.done == Stage::kRecord && summary(i, Stage::kLabel).empty() &&
        !converged(i)) {
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
      const double fraction = summary(i, Stage::kSelect).at("candidate_fraction").get<double>();
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
         summary(iteration, Stage::kSelect).at("candidate_fraction").get<double>() <
             cfg_.stop_candidate_fraction;
}

// A continued filter can diverge (docs/online-learning.md, "Known limits"): a member whose training force
// RMSE exceeds reset_factor times its previous round's is trained again from its previous weights with a
// fresh covariance, and the diverged run is kept beside it. Updates members and errors; one record per
// member, null for those kept.
std::vector<json> LearningLoop::reset_diverged(int i, TrainingRound& round,
                                               std::vector<TrainedMember>& members, std::vector<json>& errors,
                                               const std::vector<std::string>& training) {
  std::vector<json> resets(members.size());
  const json previous = summary(i - 1, Stage::kTrain);
  round.restart_from.assign(members.size(), "");
  for (std::size_t k = 0; k < members.size(); ++k) {
    const json& before = previous.at("members").at(k);
    const double was = before.contains("train_rmse_f")
                           ? before.at("train_rmse_f").get<double>()
                           : previous.at("train_errors").at("rmse_f").get<double>();
    const double now = errors[k].at("rmse_f").get<double>();
    if (now <= cfg_.train.reset_factor * was) continue;  // a nan is a divergence too
    const fs::path dir = fs::path(round.dir) / fmt::format("model_{}", k);
    const fs::path kept = fs::path(round.dir) / fmt::format("model_{}.diverged", k);
    log_->warn(
        "train: member {} diverged (training force RMSE {:.4g} eV/A, {:.4g} before; reset_factor {:g}): "
        "trained again from {} with a fresh covariance; the diverged run is kept in {}",
        k, now, was, cfg_.train.reset_factor, before.at("model").get<std::string>(), kept.string());
    fs::remove_all(kept);
    fs::rename(dir, kept);
    round.restart_from[k] = before.at("model").get<std::string>();
    resets[k] = {{"diverged_rmse_f", now}, {"previous_rmse_f", was}, {"kept", kept.string()}};
  }
  if (std::any_of(resets.begin(), resets.end(), [](const json& r) { return !r.is_null(); })) {
    members = train_ensemble(cfg_, round, *log_);  // only the reset members train: the others are done
    for (std::size_t k = 0; k < members.size(); ++k)
      if (!resets[k].is_null()) errors[k] = errors_of(members[k].model, training);
  }
  return resets;
}

void LearningLoop::train(int i) {
  const auto start = std::chrono::steady_clock::now();
  TrainingRound round;
  round.dir = stage_dir(i, Stage::kTrain);
  for (int j = 0; j < i; ++j)
    if (summary(j, Stage::kLabel).value("labelled", 0) > 0)
      round.label_groups.push_back(path(kLabelFile) + "#/" + iteration_group(j));
  if (i == 0) {
    round.numb_steps = cfg_.train.init_steps;
  } else {
    const json previous = summary(i - 1, Stage::kTrain);
    round.numb_steps = previous.at("numb_steps").get<std::int64_t>() + cfg_.train.steps;
    for (const auto& m : previous.at("members"))
      round.checkpoints.push_back(m.at("checkpoint").get<std::string>());
  }
  log_->info("iteration {}: train {} models to step {} on the user's data and {} labelled iterations", i,
             cfg_.train.models, round.numb_steps, round.label_groups.size());
  auto members = train_ensemble(cfg_, round, *log_);
  // The errors of every member on all training frames (model 0's also drives the exploration).
  std::vector<std::string> training = user_systems_;
  training.insert(training.end(), round.label_groups.begin(), round.label_groups.end());
  std::vector<json> errors;
  for (const auto& m : members) errors.push_back(errors_of(m.model, training));
  const std::vector<json> resets = i > 0 && cfg_.train.reset_factor > 0.0
                                       ? reset_diverged(i, round, members, errors, training)
                                       : std::vector<json>(members.size());
  json s{{"numb_steps", round.numb_steps}, {"label_groups", round.label_groups}, {"members", json::array()}};
  for (std::size_t k = 0; k < members.size(); ++k) {
    const auto& m = members[k];
    json j{{"model", m.model},
           {"checkpoint", m.checkpoint},
           {"steps", m.steps},
           {"wall_s", m.wall_s},
           {"train_rmse_f", errors[k].at("rmse_f")}};
    if (!resets[k].is_null()) j["reset"] = resets[k];
    s["members"].push_back(j);
  }
  s["train_errors"] = errors.front();
  if (!cfg_.test_data.empty()) s["test_errors"] = errors_of(members.front().model, cfg_.test_data);
  s["wall_s"] = seconds_since(start);
  log_->info("iteration {}: model 0: training force RMSE {:.4f} eV/A{}", i,
             s["train_errors"]["rmse_f"].get<double>(),
             s.contains("test_errors")
                 ? fmt::format(", test {:.4f} eV/A", s["test_errors"]["rmse_f"].get<double>())
                 : "");
  finish(i, Stage::kTrain, s);
}

void LearningLoop::explore(int i) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> models;
  const json trained = summary(i, Stage::kTrain);  // kept alive for the loop below
  for (const auto& m : trained.at("members")) models.push_back(m.at("model").get<std::string>());
  log_->info("iteration {}: explore", i);
  const auto runs = deepkf::explore(cfg_, i, stage_dir(i, Stage::kExplore), models, *log_);
  json s{{"runs", json::array()}};
  for (const auto& r : runs) s["runs"].push_back(r.to_json());
  s["wall_s"] = seconds_since(start);
  finish(i, Stage::kExplore, s);
}

void LearningLoop::select(int i) {
  std::vector<ExplorationRun> runs;
  const json explored = summary(i, Stage::kExplore);
  for (const auto& r : explored.at("runs")) runs.push_back(ExplorationRun::from_json(r));
  std::vector<std::string> checkpoints;
  const json trained = summary(i, Stage::kTrain);  // kept alive for the loop below
  for (const auto& m : trained.at("members")) checkpoints.push_back(m.at("checkpoint").get<std::string>());
  scorer_->use_models(checkpoints);
  const json s =
      select_stage(cfg_, i, runs, *scorer_, state_.reference_level, stage_dir(i, Stage::kSelect), *log_);
  finish(i, Stage::kSelect, s);
}

void LearningLoop::label(int i) {
  const auto start = std::chrono::steady_clock::now();
  const json selected = summary(i, Stage::kSelect).at("frames");
  std::vector<System> frames;
  for (const auto& f : selected) frames.push_back(frame_from_json(f, f.at("run").get<std::string>()));
  log_->info("iteration {}: label {} frames with CP2K", i, frames.size());
  const std::string dir = stage_dir(i, Stage::kLabel);
  const auto outcomes = label_frames(cfg_, *cp2k_input_, frames, dir, *log_);
  json s{{"labelled", 0}, {"label_failed", 0}, {"label_cp2k_s", 0.0}, {"frames", json::array()}};
  for (std::size_t k = 0; k < outcomes.size(); ++k) {
    const LabelOutcome& o = outcomes[k];
    json f = outcome_json(o);
    f["dir"] = (fs::path(dir) / fmt::format("frame_{:03d}", k)).string();
    s["frames"].push_back(f);
    s[o.ok ? "labelled" : "label_failed"] = s[o.ok ? "labelled" : "label_failed"].get<int>() + 1;
    s["label_cp2k_s"] = s["label_cp2k_s"].get<double>() + o.wall_s;
  }
  s["label_wall_s"] = seconds_since(start);

  // labels.h5 again from every iteration's labelled frames, this one's included.
  std::vector<std::pair<int, std::vector<LabelledFrame>>> all;
  for (int j = 0; j <= i; ++j) {
    const json sel = summary(j, Stage::kSelect);
    const json lab = j == i ? s : summary(j, Stage::kLabel);
    if (lab.empty()) continue;
    std::vector<LabelledFrame> frames_j;
    for (std::size_t k = 0; k < lab.at("frames").size(); ++k) {
      const json& l = lab.at("frames")[k];
      if (!l.at("ok").get<bool>()) continue;
      json f = sel.at("frames")[k];
      for (const char* key : {"energy", "force", "virial"}) f[key] = l.at(key);
      const json provenance{{"iteration", j},          {"run", f.at("run")},
                            {"start", f.at("start")},  {"step", f.at("step")},
                            {"score", f.at("score")},  {"score_name", sel.at("score")},
                            {"cp2k_dir", l.at("dir")}, {"cp2k_wall_s", l.at("wall_s")}};
      frames_j.push_back({frame_from_json(f, f.at("run").get<std::string>()), provenance});
    }
    all.emplace_back(j, std::move(frames_j));
  }
  write_label_file(path(kLabelFile), all);
  log_->info("iteration {}: {} frames labelled, {} failed; {} written", i, s["labelled"].get<int>(),
             s["label_failed"].get<int>(), path(kLabelFile));
  finish(i, Stage::kLabel, s);
}

void LearningLoop::record(int i) {
  std::string lines;
  std::vector<json> records;
  for (int j = 0; j <= i; ++j) {
    records.push_back(iteration_record(j, summary(j, Stage::kTrain), summary(j, Stage::kExplore),
                                       summary(j, Stage::kSelect), summary(j, Stage::kLabel)));
    lines += records.back().dump() + "\n";
  }
  write_text_atomically(path("iterations.jsonl"), lines);
  write_text_atomically(path("iterations.svg"), records_svg(records));
  log_->info("iteration {}: {}", i, records.back().dump());
  finish(i, Stage::kRecord, json());
}

}  // namespace deepkf
