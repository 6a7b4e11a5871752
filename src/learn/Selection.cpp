#include "src/learn/Selection.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/learn/FrameSelection.hpp"
#include "src/learn/LammpsInput.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
constexpr std::uint64_t kSelectionSeedStride = 1000003;  // a prime: iterations draw unrelated orders
}

json frame_json(const System& s, std::int64_t f) {
  const auto slice = [&](const std::vector<double>& v, std::int64_t width) {
    return std::vector<double>(v.begin() + f * width, v.begin() + (f + 1) * width);
  };
  json j{{"type_map", s.type_map},
         {"atom_types", s.atom_types},
         {"coord", slice(s.coord, 3 * s.natoms)},
         {"box", slice(s.box, 9)}};
  if (!s.energy.empty()) j["energy"] = s.energy[static_cast<std::size_t>(f)];
  if (s.has_force()) j["force"] = slice(s.force, 3 * s.natoms);
  if (s.has_virial()) j["virial"] = slice(s.virial, 9);
  return j;
}

System frame_from_json(const json& j, const std::string& source) {
  System s;
  s.source = source;
  s.type_map = j.at("type_map").get<std::vector<std::string>>();
  s.atom_types = j.at("atom_types").get<std::vector<int>>();
  s.natoms = static_cast<std::int64_t>(s.atom_types.size());
  s.nframes = 1;
  s.periodic = true;
  s.coord = j.at("coord").get<std::vector<double>>();
  s.box = j.at("box").get<std::vector<double>>();
  if (j.contains("energy")) s.energy = {j.at("energy").get<double>()};
  if (j.contains("force")) s.force = j.at("force").get<std::vector<double>>();
  if (j.contains("virial")) s.virial = j.at("virial").get<std::vector<double>>();
  return s;
}

namespace {

// Reads and scores every run's dumped frames into trajectories[r] and scores[r], with a note per run (a run
// that failed keeps what it dumped; one that finished but cannot be read is an error).
std::vector<RunNote> score_runs(const std::vector<ExplorationRun>& runs, const FrameScorer& scorer,
                                std::vector<ExploredFrames>& trajectories,
                                std::vector<std::vector<double>>& scores, spdlog::logger& log) {
  std::vector<RunNote> notes;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const ExplorationRun& run = runs[r];
    const std::string dump = (fs::path(run.dir) / kTrajectoryFile).string();
    std::string note;
    std::error_code ec;
    try {
      if (!run.ok && !fs::exists(dump, ec)) {
        note = "failed before dumping a frame";
      } else {
        trajectories[r] = read_explored_frames(dump, run.elements);
        scores[r] = scorer.score({run.dir, trajectories[r]});
        if (trajectories[r].truncated) note = "the dump's last frame was cut short and is left out";
      }
    } catch (const DataError& e) {
      if (run.ok) throw;
      // A run that failed may have left a torn file: its frames are lost, the others are not.
      trajectories[r] = ExploredFrames{};
      scores[r].clear();
      note = std::string("its frames could not be read: ") + e.what();
    }
    if (!note.empty()) log.warn("select: run {} ({}): {}", r, run.dir, note);
    notes.push_back({run.dir, static_cast<std::int64_t>(scores[r].size()), note});
  }
  return notes;
}

// scores.tsv: every frame's score and class, for plots and for choosing a window.
std::string scores_table(const std::vector<ExploredFrames>& trajectories,
                         const std::vector<std::vector<double>>& scores, const std::string& score_name,
                         double lo, double hi) {
  std::string table =
      "# run\tstep\tscore\tclass (" + score_name + fmt::format(", window [{:g}, {:g}))\n", lo, hi);
  for (std::size_t r = 0; r < scores.size(); ++r) {
    for (std::size_t f = 0; f < scores[r].size(); ++f) {
      const double s = scores[r][f];
      table += fmt::format("{}\t{}\t{:.6g}\t{}\n", r, trajectories[r].steps[f], s,
                           frame_class_name(frame_class(s, lo, hi)));
    }
  }
  return table;
}

}  // namespace

SelectRecord select_stage(const LearnConfig& cfg, int iteration, const std::vector<ExplorationRun>& runs,
                          const FrameScorer& scorer, double& reference_level, const std::string& dir,
                          spdlog::logger& log) {
  fs::create_directories(dir);
  std::vector<ExploredFrames> trajectories(runs.size());
  std::vector<std::vector<double>> scores(runs.size());
  SelectRecord summary;
  summary.runs = score_runs(runs, scorer, trajectories, scores, log);

  double lo = cfg.select.trust_lo, hi = cfg.select.trust_hi;
  if (cfg.select.relative) {
    if (reference_level <= 0.0) {
      reference_level = median_score(scores);
      if (!(reference_level > 0.0))
        throw DataError(
            fmt::format("select: the median score of iteration {}'s frames is {}: a relative trust window "
                        "needs a positive level; use an absolute one",
                        iteration, reference_level));
      log.info("select: reference level (median {} of the first exploration) {:.4g}", scorer.describe(),
               reference_level);
    }
    lo *= reference_level;
    hi *= reference_level;
  }
  std::vector<FrameRef> candidates;
  const SelectionCounts n = classify_frames(scores, lo, hi, candidates);
  std::vector<const System*> systems;
  for (const auto& t : trajectories) systems.push_back(&t.frames);
  const auto picked =
      pick_candidates(candidates, systems, cfg.select.max_frames, cfg.select.min_distance,
                      cfg.seed * kSelectionSeedStride + static_cast<std::uint64_t>(iteration));

  summary.score = scorer.describe();
  summary.reference_level = cfg.select.relative ? reference_level : 0.0;
  summary.trust_lo = lo;
  summary.trust_hi = hi;
  summary.explored = n.explored;
  summary.accurate = n.accurate;
  summary.candidate = n.candidate;
  summary.failed = n.failed;
  summary.candidate_fraction = n.candidate_fraction();
  for (const auto& p : picked) {
    summary.frames.push_back({frame_json(trajectories[p.run].frames, p.frame), runs[p.run].dir,
                              runs[p.run].start, trajectories[p.run].steps[static_cast<std::size_t>(p.frame)],
                              p.score});
  }
  const std::string table = scores_table(trajectories, scores, scorer.describe(), lo, hi);
  write_text_atomically((fs::path(dir) / "scores.tsv").string(), table);
  log.info(
      "select: {} frames explored: {} accurate, {} candidates ({:.1f} %), {} failed; {} chosen for labelling",
      n.explored, n.accurate, n.candidate, 100.0 * n.candidate_fraction(), n.failed, picked.size());
  return summary;
}

}  // namespace deepkf
