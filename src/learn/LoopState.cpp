#include "src/learn/LoopState.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/core/AtomicFile.hpp"
#include "src/core/Error.hpp"

namespace deepkf {
namespace {
constexpr Stage kStages[] = {Stage::kNone,   Stage::kTrain, Stage::kExplore,
                             Stage::kSelect, Stage::kLabel, Stage::kRecord};
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kNone:
      return "none";
    case Stage::kTrain:
      return "train";
    case Stage::kExplore:
      return "explore";
    case Stage::kSelect:
      return "select";
    case Stage::kLabel:
      return "label";
    case Stage::kRecord:
      return "record";
  }
  return "?";
}

LoopState LoopState::read(const std::string& path) {
  LoopState s;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return s;
  std::ifstream in(path);
  try {
    const auto j = nlohmann::json::parse(in);
    s.format_version = j.at("format_version").get<int>();
    if (s.format_version != 1)
      throw DataError("state file " + path + " has format version " + std::to_string(s.format_version) +
                      ", this deepkf reads 1");
    s.iteration = j.at("iteration").get<int>();
    const std::string done = j.at("done").get<std::string>();
    bool known = false;
    for (const Stage st : kStages)
      if (done == stage_name(st)) s.done = st, known = true;
    if (!known) throw DataError("state file " + path + " names an unknown stage '" + done + "'");
    s.reference_level = j.value("reference_level", 0.0);
    s.stopped = j.value("stopped", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw DataError("cannot read the state file " + path + ": " + e.what());
  }
  return s;
}

void LoopState::write(const std::string& path) const {
  const nlohmann::json j{{"format_version", format_version},
                         {"iteration", iteration},
                         {"done", stage_name(done)},
                         {"reference_level", reference_level},
                         {"stopped", stopped}};
  write_text_atomically(path, j.dump(2) + "\n");
}

}  // namespace deepkf
