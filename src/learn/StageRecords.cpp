#include "src/learn/StageRecords.hpp"

#include "src/core/Error.hpp"
#include "src/learn/Selection.hpp"

namespace deepkf {
using json = nlohmann::json;

namespace {

// The keys SelectedFrame adds to frame_json's.
constexpr const char* kFrameKeys[] = {"run", "start", "step", "score"};

ErrorRecord error_record(const json& j) {
  ErrorRecord e;
  e.frames = j.at("frames").get<std::int64_t>();
  e.rmse_e = j.at("rmse_e").get<double>();
  e.rmse_f = j.at("rmse_f").get<double>();
  if (j.contains("rmse_v")) e.rmse_v = j.at("rmse_v").get<double>();
  return e;
}

MemberRecord member_record(const json& j) {
  MemberRecord m;
  m.model = j.at("model").get<std::string>();
  m.checkpoint = j.at("checkpoint").get<std::string>();
  m.steps = j.at("steps").get<std::int64_t>();
  m.wall_s = j.at("wall_s").get<double>();
  if (j.contains("train_rmse_f")) m.train_rmse_f = j.at("train_rmse_f").get<double>();
  if (j.contains("reset")) {
    const json& r = j.at("reset");
    m.reset = MemberReset{r.at("diverged_rmse_f").get<double>(), r.at("previous_rmse_f").get<double>(),
                          r.at("kept").get<std::string>()};
  }
  return m;
}

// Runs `read` on a summary's contents; a missing key or a value of the wrong type becomes one DataError.
template <class Read>
auto reading(const std::string& file, Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const json::exception& e) {
    throw DataError("cannot read " + file + ": " + e.what());
  }
}

}  // namespace

System SelectedFrame::system() const { return frame_from_json(atoms, run); }

json to_json(const ErrorRecord& r) {
  json j{{"frames", r.frames}, {"rmse_e", r.rmse_e}, {"rmse_f", r.rmse_f}};
  if (r.rmse_v) j["rmse_v"] = *r.rmse_v;
  return j;
}

json to_json(const TrainRecord& r) {
  json s{{"numb_steps", r.numb_steps}, {"label_groups", r.label_groups}, {"members", json::array()}};
  for (const MemberRecord& m : r.members) {
    json j{{"model", m.model}, {"checkpoint", m.checkpoint}, {"steps", m.steps}, {"wall_s", m.wall_s}};
    if (m.train_rmse_f) j["train_rmse_f"] = *m.train_rmse_f;
    if (m.reset) {
      j["reset"] = {{"diverged_rmse_f", m.reset->diverged_rmse_f},
                    {"previous_rmse_f", m.reset->previous_rmse_f},
                    {"kept", m.reset->kept}};
    }
    s["members"].push_back(j);
  }
  s["train_errors"] = to_json(r.train_errors);
  if (r.test_errors) s["test_errors"] = to_json(*r.test_errors);
  s["wall_s"] = r.wall_s;
  return s;
}

json to_json(const ExploreRecord& r) {
  json s{{"runs", json::array()}, {"wall_s", r.wall_s}};
  for (const auto& run : r.runs) s["runs"].push_back(run.to_json());
  return s;
}

json to_json(const SelectRecord& r) {
  json s{{"score", r.score},
         {"reference_level", r.reference_level},
         {"trust_lo", r.trust_lo},
         {"trust_hi", r.trust_hi},
         {"explored", r.explored},
         {"accurate", r.accurate},
         {"candidate", r.candidate},
         {"failed", r.failed},
         {"candidate_fraction", r.candidate_fraction},
         {"runs", json::array()},
         {"frames", json::array()}};
  for (const RunNote& n : r.runs)
    s["runs"].push_back({{"dir", n.dir}, {"frames", n.frames}, {"note", n.note}});
  for (const SelectedFrame& f : r.frames) {
    json j = f.atoms;
    j["run"] = f.run;
    j["start"] = f.start;
    j["step"] = f.step;
    j["score"] = f.score;
    s["frames"].push_back(j);
  }
  return s;
}

json to_json(const LabelRecord& r) {
  json s{{"labelled", r.labelled},
         {"label_failed", r.label_failed},
         {"label_cp2k_s", r.label_cp2k_s},
         {"label_wall_s", r.label_wall_s},
         {"frames", json::array()}};
  for (const LabelledFrameRecord& f : r.frames) {
    json j = outcome_json(f.outcome);
    j["dir"] = f.dir;
    s["frames"].push_back(j);
  }
  return s;
}

TrainRecord train_record(const json& j, const std::string& file) {
  return reading(file, [&] {
    TrainRecord r;
    r.numb_steps = j.at("numb_steps").get<std::int64_t>();
    r.label_groups = j.at("label_groups").get<std::vector<std::string>>();
    for (const auto& m : j.at("members")) r.members.push_back(member_record(m));
    r.train_errors = error_record(j.at("train_errors"));
    if (j.contains("test_errors")) r.test_errors = error_record(j.at("test_errors"));
    r.wall_s = j.at("wall_s").get<double>();
    return r;
  });
}

ExploreRecord explore_record(const json& j, const std::string& file) {
  return reading(file, [&] {
    ExploreRecord r;
    for (const auto& run : j.at("runs")) r.runs.push_back(ExplorationRun::from_json(run));
    r.wall_s = j.at("wall_s").get<double>();
    return r;
  });
}

SelectRecord select_record(const json& j, const std::string& file) {
  return reading(file, [&] {
    SelectRecord r;
    r.score = j.at("score").get<std::string>();
    r.reference_level = j.value("reference_level", 0.0);
    r.trust_lo = j.at("trust_lo").get<double>();
    r.trust_hi = j.at("trust_hi").get<double>();
    r.explored = j.at("explored").get<std::int64_t>();
    r.accurate = j.at("accurate").get<std::int64_t>();
    r.candidate = j.at("candidate").get<std::int64_t>();
    r.failed = j.at("failed").get<std::int64_t>();
    r.candidate_fraction = j.at("candidate_fraction").get<double>();
    for (const auto& n : j.value("runs", json::array()))
      r.runs.push_back({n.at("dir").get<std::string>(), n.at("frames").get<std::int64_t>(),
                        n.at("note").get<std::string>()});
    for (const auto& f : j.at("frames")) {
      SelectedFrame s;
      s.atoms = f;
      for (const char* key : kFrameKeys) s.atoms.erase(key);
      s.run = f.at("run").get<std::string>();
      s.start = f.at("start").get<std::string>();
      s.step = f.at("step").get<std::int64_t>();
      s.score = f.at("score").get<double>();
      r.frames.push_back(std::move(s));
    }
    return r;
  });
}

LabelRecord label_record(const json& j, const std::string& file) {
  return reading(file, [&] {
    LabelRecord r;
    r.labelled = j.at("labelled").get<int>();
    r.label_failed = j.at("label_failed").get<int>();
    r.label_cp2k_s = j.at("label_cp2k_s").get<double>();
    r.label_wall_s = j.at("label_wall_s").get<double>();
    for (const auto& f : j.at("frames"))
      r.frames.push_back({outcome_from_json(f), f.at("dir").get<std::string>()});
    return r;
  });
}

}  // namespace deepkf
