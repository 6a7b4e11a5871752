#include "src/learn/Labelling.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "src/learn/ParallelJobs.hpp"

namespace deepkf {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kResult = "result.json";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// CP2K's restart files (wavefunctions, k-point data) are large and not needed once the labels are read.
void remove_restart_files(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".wfn") != std::string::npos || name.find(".kp") != std::string::npos ||
        name.find("RESTART") != std::string::npos)
      fs::remove(entry.path(), ec);
  }
}

}  // namespace

LabelOutcome outcome_from_json(const json& j) {
  LabelOutcome o;
  o.ok = j.at("ok").get<bool>();
  o.wall_s = j.at("wall_s").get<double>();
  if (o.ok) {
    o.labels.energy = j.at("energy").get<double>();
    o.labels.force = j.at("force").get<std::vector<double>>();
    o.labels.virial = j.at("virial").get<std::array<double, 9>>();
  } else {
    o.failure = j.at("failure").get<std::string>();
  }
  o.reused = true;
  return o;
}

json outcome_json(const LabelOutcome& o) {
  json j{{"ok", o.ok}, {"wall_s", o.wall_s}};
  if (o.ok) {
    j["energy"] = o.labels.energy;
    j["force"] = o.labels.force;
    j["virial"] = o.labels.virial;
  } else {
    j["failure"] = o.failure;
  }
  return j;
}

std::vector<LabelOutcome> label_frames(const LearnConfig& cfg, const Cp2kTemplate& input,
                                       const std::vector<System>& frames, const std::string& dir,
                                       spdlog::logger& log) {
  const LabelConfig& lc = cfg.label;
  const std::string cp2k = find_program(lc.cp2k, cfg.base_dir, "label.cp2k", cfg.file);
  const std::string mpirun =
      lc.ranks > 1 ? find_program(lc.mpirun, cfg.base_dir, "label.mpirun", cfg.file) : "";
  std::vector<LabelOutcome> outcomes(frames.size());
  run_parallel(frames.size(), lc.jobs, [&](std::size_t i) {
    const fs::path frame_dir = fs::path(dir) / fmt::format("frame_{:03d}", i);
    const fs::path result = frame_dir / kResult;
    std::error_code ec;
    if (fs::exists(result, ec)) {
      outcomes[i] = outcome_from_json(json::parse(read_text(result)));
      return;
    }
    fs::create_directories(frame_dir);
    const System& frame = frames[i];
    write_text_atomically((frame_dir / "in.inp").string(), input.render(frame, 0));

    ProgramRun run;
    if (lc.ranks > 1) run.argv = {mpirun, "-np", std::to_string(lc.ranks)};
    run.argv.insert(run.argv.end(), {cp2k, "-i", "in.inp"});
    run.cwd = frame_dir.string();
    run.output = "out.log";
    run.env = {{"OMP_NUM_THREADS", std::to_string(lc.threads)}};
    run.timeout_s = lc.timeout_s;
    log.info("label: frame {}: {} (in {})", i, command_line(run.argv), run.cwd);
    const ProgramResult r = run_program(run);
    remove_restart_files(frame_dir);
    LabelOutcome& o = outcomes[i];
    o.wall_s = r.wall_s;
    if (!r.ok()) {
      o.failure = failure_text(run, r);
    } else {
      try {
        std::vector<std::string> elements;
        for (const int t : frame.atom_types) elements.push_back(frame.type_map[static_cast<std::size_t>(t)]);
        const double volume = Cell(frame.box.data()).volume();
        o.labels = parse_cp2k_output(read_text(frame_dir / "out.log"), elements, volume,
                                     (frame_dir / "out.log").string());
        o.ok = true;
      } catch (const DataError& e) {
        o.failure = e.what();
      }
    }
    if (o.ok) {
      log.info("label: frame {}: E = {:.6f} eV in {:.1f} s", i, o.labels.energy, o.wall_s);
    } else {
      log.warn("label: frame {} failed and is skipped: {}", i, o.failure);
    }
    write_text_atomically(result.string(), outcome_json(o).dump() + "\n");
  });
  return outcomes;
}

}  // namespace deepkf
