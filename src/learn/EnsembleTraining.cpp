#include "src/learn/EnsembleTraining.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Cores.hpp"
#include "src/core/Error.hpp"
#include "src/core/JsonFile.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "src/learn/ParallelJobs.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/TrainConfig.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::vector<std::string> as_list(const json& v) {
  if (v.is_string()) return {v.get<std::string>()};
  return v.get<std::vector<std::string>>();
}

// Adds `offset` to the seed at `key` of `section` (1 when absent).
void shift_seed(json& section, const std::string& key, int offset) {
  const std::int64_t seed =
      section.contains(key) && section.at(key).is_number_integer() ? section.at(key).get<std::int64_t>() : 1;
  section[key] = seed + offset;
}

}  // namespace

json member_input(const json& base, const std::string& base_file, const TrainingRound& round, int member,
                  int new_frame_repeat, int threads) {
  json in = base;
  const std::string base_dir = fs::absolute(base_file).parent_path().string();
  json& training = in.at("training");
  json& data = training.at("training_data");
  auto systems = resolve_system_paths(as_list(data.at("systems")), base_dir, "training.training_data.systems",
                                      base_file);
  // The user's own weights for their systems stay; the labelled groups get 1, the newest new_frame_repeat.
  std::vector<int> repeat(systems.size(), 1);
  if (data.contains("repeat")) {
    const json& r = data.at("repeat");
    repeat = r.is_array() ? r.get<std::vector<int>>() : std::vector<int>(systems.size(), r.get<int>());
  }
  for (std::size_t g = 0; g < round.label_groups.size(); ++g) {
    systems.push_back(round.label_groups[g]);
    repeat.push_back(g + 1 == round.label_groups.size() ? new_frame_repeat : 1);
  }
  // A batch_size list has one entry per path: the labelled groups are taken one frame at a time.
  if (data.contains("batch_size") && data.at("batch_size").is_array()) {
    for (std::size_t g = 0; g < round.label_groups.size(); ++g) data["batch_size"].push_back(1);
  }
  data["systems"] = systems;
  data["repeat"] = repeat;
  if (training.contains("validation_data") && training.at("validation_data").is_object() &&
      training.at("validation_data").contains("systems")) {
    json& valid = training.at("validation_data");
    valid["systems"] = resolve_system_paths(as_list(valid.at("systems")), base_dir,
                                            "training.validation_data.systems", base_file);
  }
  // The round's length replaces whatever the input set it with (DeePMD-kit's other names included).
  for (const auto* names : {&kNumbStepsNames, &kNumEpochNames})
    for (const auto& key : *names) training.erase(key);
  training["numb_steps"] = round.numb_steps;
  shift_seed(training, "seed", member);
  // Members differ in their initial weights and data order.
  if (in.contains("model") && in.at("model").is_object()) {
    for (const char* net : {"descriptor", "fitting_net"})
      if (in.at("model").contains(net) && in.at("model").at(net).is_object())
        shift_seed(in.at("model").at(net), "seed", member);
  }
  if (training.value("num_threads", 0) == 0) training["num_threads"] = threads;
  return in;
}

std::vector<TrainedMember> train_ensemble(const LearnConfig& cfg, const TrainingRound& round,
                                          spdlog::logger& log) {
  const LearnTrainConfig& tc = cfg.train;
  const std::string deepkf =
      tc.deepkf.empty() ? this_executable() : find_program(tc.deepkf, cfg.base_dir, "train.deepkf", cfg.file);
  const std::string mpirun =
      tc.ranks > 1 ? find_program(tc.mpirun, cfg.base_dir, "train.mpirun", cfg.file) : "";
  const json base = read_json_file(tc.input);
  const int at_once = std::min(tc.jobs, tc.models);
  const int cores = usable_cores();
  const int threads = std::max(1, cores / (at_once * tc.ranks));

  std::vector<TrainedMember> members(static_cast<std::size_t>(tc.models));
  run_parallel(members.size(), at_once, [&](std::size_t k) {
    const fs::path dir = fs::path(round.dir) / fmt::format("model_{}", k);
    const fs::path done = dir / "done.json";
    TrainedMember& m = members[k];
    m.model = (dir / "model.pt").string();
    m.checkpoint = (dir / "model.ckpt").string();
    std::error_code ec;
    if (fs::exists(done, ec)) {  // finished before the loop was stopped
      const json d = read_json_file(done.string());
      m.steps = d.at("steps").get<std::int64_t>();
      m.wall_s = d.at("wall_s").get<double>();
      log.info("train: member {} was trained before ({} steps)", k, m.steps);
      return;
    }
    fs::create_directories(dir);
    const json input = member_input(base, tc.input, round, static_cast<int>(k), tc.new_frame_repeat, threads);
    write_text_atomically((dir / "input.json").string(), input.dump(2) + "\n");

    ProgramRun run;
    if (tc.ranks > 1) run.argv = {mpirun, "-np", std::to_string(tc.ranks)};
    run.argv.insert(run.argv.end(), {deepkf, "train", "input.json", "-o", ".", "--no-progress"});
    if (k < round.restart_from.size() && !round.restart_from[k].empty()) {
      run.argv.insert(run.argv.end(), {"--init-model", round.restart_from[k]});
    } else if (!round.checkpoints.empty()) {
      run.argv.insert(run.argv.end(), {"--continue", round.checkpoints.at(k)});
    } else if (!tc.init_models.empty()) {
      run.argv.insert(run.argv.end(), {"--init-model", tc.init_models[k % tc.init_models.size()]});
    }
    run.cwd = dir.string();
    run.output = "train.out";
    run.env = {{"OMP_NUM_THREADS", std::to_string(threads)}};
    log.info("train: member {}: {} (in {})", k, command_line(run.argv), run.cwd);
    const ProgramResult r = run_program(run);
    if (!r.ok() || !fs::exists(m.model, ec) || !fs::exists(m.checkpoint, ec))
      throw Error("training member " + std::to_string(k) + " failed: " + failure_text(run, r));
    m.steps = round.numb_steps;
    m.wall_s = r.wall_s;
    write_text_atomically(done.string(), json{{"steps", m.steps}, {"wall_s", m.wall_s}}.dump() + "\n");
    log.info("train: member {} reached step {} in {:.1f} s", k, m.steps, m.wall_s);
  });
  return members;
}

}  // namespace deepkf
