// The stages' records (summary.json): every field survives a write and a read, summaries written before
// fields were added still read, and a damaged summary is one error naming the file and the key.
#include "src/core/Error.hpp"
#include "src/learn/IterationRecord.hpp"
#include "src/learn/StageRecords.hpp"
#include "tests/support/Catch.hpp"

using namespace deepkf;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

TrainRecord sample_train() {
  TrainRecord r;
  r.numb_steps = 80;
  r.label_groups = {"/run/labels.h5#/iter.000"};
  r.members.push_back({"m0.pt", "m0.ckpt", 80, 12.5, 0.21, std::nullopt});
  r.members.push_back({"m1.pt", "m1.ckpt", 80, 13.0, 0.19, MemberReset{4.5, 0.2, "/run/model_1.diverged"}});
  r.train_errors = {40, 0.003, 0.21, 0.01};
  r.test_errors = ErrorRecord{10, 0.004, 0.25, std::nullopt};
  r.wall_s = 30.0;
  return r;
}

SelectRecord sample_select() {
  SelectRecord r;
  r.score = "ensemble force deviation (eV/A)";
  r.reference_level = 0.0;
  r.trust_lo = 0.1;
  r.trust_hi = 0.3;
  r.explored = 20;
  r.accurate = 12;
  r.candidate = 6;
  r.failed = 2;
  r.candidate_fraction = 0.3;
  r.runs = {{"/run/explore/run_000", 20, ""}};
  const json atoms{{"type_map", {"Si"}},
                   {"atom_types", {0}},
                   {"coord", {0.0, 0.0, 0.0}},
                   {"box", {5.0, 0, 0, 0, 5.0, 0, 0, 0, 5.0}}};
  r.frames.push_back({atoms, "/run/explore/run_000", "si.h5 frame 0", 40, 0.17});
  return r;
}

LabelRecord sample_label() {
  LabelRecord r;
  LabelOutcome ok;
  ok.ok = true;
  ok.wall_s = 5.0;
  ok.labels.energy = -108.5;
  ok.labels.force = {0.1, -0.2, 0.3};
  ok.labels.virial = {1, 0, 0, 0, 2, 0, 0, 0, 3};
  r.frames.push_back({ok, "/run/label/frame_000"});
  r.labelled = 1;
  r.label_cp2k_s = 5.0;
  r.label_wall_s = 6.0;
  return r;
}

}  // namespace

TEST_CASE("stage records are written and read back field by field", "[learn][records]") {
  const TrainRecord t = sample_train();
  const json tj = to_json(t);
  CHECK(to_json(train_record(tj, "train/summary.json")) == tj);
  const TrainRecord back = train_record(tj, "train/summary.json");
  REQUIRE(back.members.size() == 2);
  CHECK_FALSE(back.members[0].reset);
  REQUIRE(back.members[1].reset);
  CHECK(back.members[1].reset->kept == "/run/model_1.diverged");
  CHECK(back.train_errors.rmse_v == 0.01);
  REQUIRE(back.test_errors);
  CHECK_FALSE(back.test_errors->rmse_v);

  ExploreRecord e;
  ExplorationRun run;
  run.dir = "/run/explore/run_000";
  run.start = "si.h5 frame 0";
  run.elements = {"Si"};
  run.temperature = 300.0;
  run.ok = true;
  run.wall_s = 9.0;
  e.runs = {run, run};
  e.runs[1].ok = false;
  e.runs[1].failure = "lmp exited with status 1";
  e.wall_s = 20.0;
  const json ej = to_json(e);
  CHECK(to_json(explore_record(ej, "explore/summary.json")) == ej);

  const json sj = to_json(sample_select());
  CHECK(to_json(select_record(sj, "select/summary.json")) == sj);
  // The selected frame keeps its atoms apart from where it came from.
  const SelectedFrame f = select_record(sj, "select/summary.json").frames.at(0);
  CHECK_FALSE(f.atoms.contains("run"));
  CHECK(f.system().coord == std::vector<double>{0.0, 0.0, 0.0});
  CHECK(f.system().source == "/run/explore/run_000");

  const json lj = to_json(sample_label());
  CHECK(to_json(label_record(lj, "label/summary.json")) == lj);
  CHECK(label_record(lj, "label/summary.json").frames.at(0).outcome.labels.virial[4] == 2.0);

  // The iteration's line from the records.
  const json line = iteration_record(2, t, e, sample_select(), sample_label());
  CHECK(line.at("steps") == 80);
  CHECK(line.at("train_rmse_v") == 0.01);
  CHECK_FALSE(line.contains("test_rmse_v"));
  CHECK(line.at("test_frames") == 10);
  CHECK(line.at("explore_failed_runs") == 1);
  CHECK(line.at("accurate_fraction") == Approx(0.6));
  CHECK(line.at("selected") == 1);
  CHECK(line.at("label_cp2k_s") == 5.0);
  const json first = iteration_record(0, t, std::nullopt, std::nullopt, std::nullopt);
  CHECK_FALSE(first.contains("explored"));
  CHECK_FALSE(first.contains("labelled"));
}

TEST_CASE("older summaries still read and damaged ones are named with the file", "[learn][records]") {
  // Before divergence resets (no train_rmse_f) and before relative windows and run notes.
  json t = to_json(sample_train());
  for (auto& m : t.at("members")) {
    m.erase("train_rmse_f");
    m.erase("reset");
  }
  const TrainRecord old = train_record(t, "train/summary.json");
  CHECK_FALSE(old.members[0].train_rmse_f);
  json s = to_json(sample_select());
  s.erase("reference_level");
  s.erase("runs");
  CHECK(select_record(s, "select/summary.json").frames.size() == 1);

  json broken = to_json(sample_train());
  broken.erase("numb_steps");
  CHECK_THROWS_AS(train_record(broken, "iter.001/train/summary.json"), DataError);
  CHECK_THROWS_WITH(train_record(broken, "iter.001/train/summary.json"),
                    Contains("iter.001/train/summary.json") && Contains("numb_steps"));
  json label = to_json(sample_label());
  label.at("frames")[0]["ok"] = "yes";
  CHECK_THROWS_WITH(label_record(label, "label/summary.json"), Contains("label/summary.json"));
}
