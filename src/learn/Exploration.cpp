#include "src/learn/Exploration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Cores.hpp"
#include "src/core/Error.hpp"
#include "src/core/Random.hpp"
#include "src/data/Dataset.hpp"
#include "src/learn/Elements.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "src/learn/LammpsInput.hpp"
#include "src/learn/ParallelJobs.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::uint64_t kVelocityStream = 0x76656c6f;  // "velo"

// A start structure: one frame of one system, under the model's type map.
struct Start {
  System frame;  // one frame
  std::string name;
  std::array<int, 3> replicate{1, 1, 1};
};

std::vector<Start> read_starts(const LearnConfig& cfg, const std::vector<std::string>& type_map) {
  std::vector<Start> out;
  for (std::size_t i = 0; i < cfg.explore.structures.size(); ++i) {
    const StartStructure& s = cfg.explore.structures[i];
    const OpenedData opened = open_dataset({s.path}, type_map, "the model's type map");
    for (const auto& source : opened.systems) {
      for (const auto f : s.frames) {
        if (f >= source->nframes()) {
          throw ConfigError(
              fmt::format("'explore.structures[{}].frames' in {} asks for frame {}, but {} has {} frames", i,
                          cfg.file, f, source->info().source, source->nframes()));
        }
        out.push_back({source->read({f}), fmt::format("{} frame {}", source->info().source, f), s.replicate});
      }
    }
  }
  return out;
}

}  // namespace

json ExplorationRun::to_json() const {
  return json{{"dir", dir},           {"start", start}, {"elements", elements}, {"temperature", temperature},
              {"pressure", pressure}, {"ok", ok},       {"failure", failure},   {"wall_s", wall_s}};
}

ExplorationRun ExplorationRun::from_json(const json& j) {
  ExplorationRun r;
  r.dir = j.at("dir").get<std::string>();
  r.start = j.at("start").get<std::string>();
  r.elements = j.at("elements").get<std::vector<std::string>>();
  r.temperature = j.at("temperature").get<double>();
  r.pressure = j.at("pressure").get<double>();
  r.ok = j.at("ok").get<bool>();
  r.failure = j.at("failure").get<std::string>();
  r.wall_s = j.at("wall_s").get<double>();
  return r;
}

std::string find_lammps_plugin(const LearnConfig& cfg) {
  if (!cfg.explore.plugin.empty()) return cfg.explore.plugin;
  // <build>/src/cli/deepkf -> <build>/lammps_plugin/libdeepkf_lammps.so
  const fs::path exe = this_executable();
  const fs::path guess =
      exe.parent_path().parent_path().parent_path() / "lammps_plugin" / "libdeepkf_lammps.so";
  std::error_code ec;
  if (fs::exists(guess, ec)) return guess.lexically_normal().string();
  throw ConfigError(
      fmt::format("'explore.plugin' is not given in {} and {} does not exist: give the path of "
                  "libdeepkf_lammps.so",
                  cfg.file, guess.lexically_normal().string()));
}

namespace {

// One exploration run: a start structure at a temperature (and pressure).
struct Job {
  std::size_t start;
  double temperature, pressure;
};

// What the runs of an iteration share: the programs, the model's elements and their masses, the start
// structures, the jobs (every start at every temperature and pressure), the steps, the runs at once and
// the threads of each.
struct ExplorationPlan {
  std::string lmp, mpirun, plugin;
  std::vector<std::string> type_map;
  std::vector<double> masses;
  std::vector<Start> starts;
  std::vector<Job> jobs;
  std::int64_t steps = 0;
  int at_once = 1, threads = 1;
};

ExplorationPlan plan_exploration(const LearnConfig& cfg, int iteration,
                                 const std::vector<std::string>& models) {
  const ExploreConfig& ec = cfg.explore;
  ExplorationPlan p;
  p.lmp = find_program(ec.lmp, cfg.base_dir, "explore.lmp", cfg.file);
  p.mpirun = ec.ranks > 1 ? find_program(ec.mpirun, cfg.base_dir, "explore.mpirun", cfg.file) : "";
  p.plugin = find_lammps_plugin(cfg);
  p.type_map = read_model_metadata(models.front()).at("type_map").get<std::vector<std::string>>();
  for (const auto& e : p.type_map) p.masses.push_back(atomic_mass(e, ec.masses));
  p.starts = read_starts(cfg, p.type_map);
  const std::vector<double> pressures = ec.ensemble == "npt" ? ec.pressures : std::vector<double>{0.0};
  for (std::size_t s = 0; s < p.starts.size(); ++s)
    for (double t : ec.temperatures)
      for (double pressure : pressures) p.jobs.push_back({s, t, pressure});
  p.steps = ec.steps[std::min(static_cast<std::size_t>(iteration), ec.steps.size() - 1)];
  p.at_once = std::min<int>(ec.jobs, static_cast<int>(p.jobs.size()));
  p.threads = std::max(1, usable_cores() / (p.at_once * ec.ranks));
  return p;
}

// Writes run j's LAMMPS data file and input (in.lammps) into run_dir.
void write_run_inputs(const LearnConfig& cfg, int iteration, const ExplorationPlan& plan, std::size_t j,
                      const std::vector<std::string>& models, const fs::path& run_dir) {
  const ExploreConfig& ec = cfg.explore;
  const Job& job = plan.jobs[j];
  const Start& start = plan.starts[job.start];
  MdRun md;
  md.plugin = plan.plugin;
  md.models = models;
  md.elements = plan.type_map;
  md.replicate = start.replicate;
  md.ensemble = ec.ensemble;
  md.temperature = job.temperature;
  md.pressure = job.pressure;
  md.barostat = ec.barostat;
  md.thermostat_damping = ec.thermostat_damping;
  md.barostat_damping = ec.barostat_damping;
  md.timestep = ec.timestep;
  md.steps = plan.steps;
  md.dump_freq = ec.dump_freq;
  // LAMMPS wants a seed in [1, 2^31 - 1); each run of each iteration its own.
  std::mt19937_64 rng =
      make_stream(cfg.seed, kVelocityStream, static_cast<std::uint64_t>(iteration) * 100000 + j);
  md.velocity_seed = static_cast<std::int64_t>(uniform_below(rng, 2147483646)) + 1;
  write_text_atomically((run_dir / md.data_file).string(), lammps_data_text(start.frame, 0, plan.masses));
  write_text_atomically((run_dir / "in.lammps").string(), lammps_input_text(md));
}

// Runs LAMMPS on run j's inputs and records how it ended (run.json, written atomically).
ExplorationRun launch_run(const LearnConfig& cfg, const ExplorationPlan& plan, std::size_t j,
                          const fs::path& run_dir, spdlog::logger& log) {
  const ExploreConfig& ec = cfg.explore;
  const Job& job = plan.jobs[j];
  const Start& start = plan.starts[job.start];
  ProgramRun run;
  if (ec.ranks > 1) run.argv = {plan.mpirun, "-np", std::to_string(ec.ranks)};
  run.argv.insert(run.argv.end(), {plan.lmp, "-in", "in.lammps", "-log", "log.lammps"});
  run.cwd = run_dir.string();
  run.output = "lmp.out";
  run.env = {{"OMP_NUM_THREADS", std::to_string(plan.threads)}};
  log.info("explore: run {} ({}, {:g} K{}): {} (in {})", j, start.name, job.temperature,
           ec.ensemble == "npt" ? fmt::format(", {:g} bar", job.pressure) : "", command_line(run.argv),
           run.cwd);
  const ProgramResult r = run_program(run);
  ExplorationRun out;
  out.dir = run_dir.string();
  out.start = start.name;
  out.elements = plan.type_map;
  out.temperature = job.temperature;
  out.pressure = job.pressure;
  out.ok = r.ok();
  out.wall_s = r.wall_s;
  if (!out.ok) {
    out.failure = failure_text(run, r);
    log.warn("explore: run {} failed; its frames up to the failure are kept: {}", j, out.failure);
  }
  write_text_atomically((run_dir / "run.json").string(), out.to_json().dump(2) + "\n");
  return out;
}

}  // namespace

std::vector<ExplorationRun> explore(const LearnConfig& cfg, int iteration, const std::string& dir,
                                    const std::vector<std::string>& models, spdlog::logger& log) {
  const ExplorationPlan plan = plan_exploration(cfg, iteration, models);
  std::vector<ExplorationRun> runs(plan.jobs.size());
  run_parallel(plan.jobs.size(), plan.at_once, [&](std::size_t j) {
    const fs::path run_dir = fs::path(dir) / fmt::format("run_{:03d}", j);
    const fs::path record = run_dir / "run.json";
    std::error_code err;
    if (fs::exists(record, err)) {  // finished before the loop was stopped
      std::ifstream in(record);
      runs[j] = ExplorationRun::from_json(json::parse(in));
      return;
    }
    fs::create_directories(run_dir);
    for (const char* stale : {kTrajectoryFile, kDeviationFile}) fs::remove(run_dir / stale, err);
    write_run_inputs(cfg, iteration, plan, j, models, run_dir);
    runs[j] = launch_run(cfg, plan, j, run_dir, log);
  });
  return runs;
}

}  // namespace deepkf
