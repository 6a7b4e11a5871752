#pragma once
// The explore stage of an online-learning iteration: molecular dynamics with the iteration's models through
// pair_style deepkf, one LAMMPS run per (start structure, temperature, pressure), explore.jobs at once. Each
// run has its folder (in.lammps, start.data, traj.dump, model_devi.out, log.lammps, lmp.out, run.json). A run
// that fails (atoms lost, a non-finite force: the model is far from its data) is recorded with the tail of
// its output, and the frames it dumped before failing are kept: they are often the most useful ones.
#include <spdlog/logger.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/learn/LearnConfig.hpp"

namespace deepkf {

struct ExplorationRun {
  std::string dir;                    // the run's folder
  std::string start;                  // "path frame N" of its start structure
  std::vector<std::string> elements;  // element of each LAMMPS type
  double temperature = 0.0;           // K
  double pressure = 0.0;              // bar (npt)
  bool ok = false;                    // LAMMPS finished every step
  std::string failure;                // when not ok: the command, status and output tail
  double wall_s = 0.0;

  nlohmann::json to_json() const;
  static ExplorationRun from_json(const nlohmann::json& j);
};

// The plugin pair_style deepkf needs: explore.plugin, or libdeepkf_lammps.so of the build that holds the
// running deepkf (<build>/lammps_plugin/). Throws ConfigError saying where it looked.
std::string find_lammps_plugin(const LearnConfig& cfg);

// Runs iteration `iteration`'s exploration in `dir` with `models` (the first drives the dynamics; with more
// than one, model_devi.out is written every dump_freq steps). A run whose folder holds a finished run.json is
// not run again. Returns every run, in job order.
std::vector<ExplorationRun> explore(const LearnConfig& cfg, int iteration, const std::string& dir,
                                    const std::vector<std::string>& models, spdlog::logger& log);

}  // namespace deepkf
