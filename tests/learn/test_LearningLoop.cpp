// `deepkf learn` for real on silicon: two labelling iterations and a last one that only trains, explores and
// selects. Small model, one short MD run at 1200 K per iteration from the Si8 cell of data/si_cp2k.h5, two
// CP2K single points per iteration with the shipped template made cheap (150 Ry, 2x2x2 k-points: about 6 s
// each on one idle core; the energy moves by about 0.1 eV/atom from the data's settings). The loop
// is killed (SIGKILL) while CP2K labels the first iteration's second frame and started again: it must finish
// that iteration with the same frames, reuse the finished label, and go on to the end; the second training
// must continue the first one's state on the grown data. Needs lmp with the plugin and cp2k.psmp; skipped
// without CP2K.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/learn/ExternalProgram.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& path) { return test::read_text(path.string()); }

json read_json(const fs::path& path) { return json::parse(read(path)); }

// The loop's inputs in `dir`: train.json (a small model on data/si_cp2k.h5) and loop.json.
void write_inputs(const std::string& dir) {
  const std::string source = DEEPKF_SOURCE_DIR;
  json train = json::parse(R"({
    "model": {"type_map": ["Si"],
              "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [4, 8],
                             "axis_neuron": 4, "type_one_side": true, "seed": 1},
              "fitting_net": {"neuron": [16, 16], "resnet_dt": true, "seed": 1}},
    "optimizer": {"type": "RLEKF", "kf_blocksize": 512, "nselect": 8, "groupsize": 4},
    "training": {"training_data": {"batch_size": 1}, "numb_steps": 1, "seed": 1, "disp_freq": 10,
                 "save_freq": 1000}
  })");
  train["training"]["training_data"]["systems"] = {source + "/data/si_cp2k.h5"};
  std::ofstream(dir + "/train.json") << train.dump(2);
  json loop = json::parse(R"({
    "iterations": 2,
    "seed": 3,
    "train": {"input": "train.json", "models": 2, "init_steps": 40, "steps": 20, "new_frame_repeat": 3, "jobs": 2},
    "explore": {"temperatures": [1200], "steps": 60, "dump_freq": 10, "timestep": 0.002},
    "select": {"trust_lo": 0.1, "trust_hi": 1000, "relative": true, "max_frames": 2},
    "label": {"kinds": {"Si": ["DZVP-MOLOPT-SR-GTH", "GTH-PBE-q4"]}, "kpoint_spacing": 0.6, "jobs": 1,
              "timeout": 600}
  })");
  loop["explore"]["structures"] = {{{"path", source + "/data/si_cp2k.h5#/Si8"}, {"frames", {0}}}};
  loop["explore"]["lmp"] = DEEPKF_LMP;
  loop["explore"]["plugin"] = DEEPKF_PLUGIN;
  // The shipped template at a lower cutoff: the test checks the loop, not the labels' accuracy.
  std::string cp2k = read(source + "/configs/learn/si_cp2k.inp");
  const auto cutoff = cp2k.find("CUTOFF 300");
  REQUIRE(cutoff != std::string::npos);
  cp2k.replace(cutoff, 10, "CUTOFF 150");
  std::ofstream(dir + "/si_cp2k.inp") << cp2k;
  loop["label"]["template"] = "si_cp2k.inp";
  std::ofstream(dir + "/loop.json") << loop.dump(2);
}

// Ends the test process as skipped when CP2K is not installed.
void require_cp2k() {
  try {
    find_program("cp2k.psmp", "/", "cp2k", "test");
  } catch (const ConfigError&) {
    std::printf("cp2k.psmp is not installed (apt-get install cp2k cp2k-data): skipped\n");
    std::exit(77);
  }
}

// Processes (other than zombies) whose working folder is `dir`.
int processes_in(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    const std::string pid = p.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const fs::path cwd = fs::read_symlink(p.path() / "cwd", ec);
    if (ec || cwd != dir) continue;
    const std::string stat = read(p.path() / "stat");
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z') ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("two iterations on silicon, killed while labelling and resumed", "[learn][loop][slow]") {
  require_cp2k();
  const auto dir = test::make_temp_dir("learn-loop");
  write_inputs(dir);
  const fs::path run = fs::path(dir) / "run";
  const fs::path first_label = run / "iter.000" / "label" / "frame_000" / "result.json";
  const fs::path second_label_dir = run / "iter.000" / "label" / "frame_001";

  // First start: killed with SIGKILL once the first frame of iteration 0 is labelled.
  const pid_t loop = fork();
  REQUIRE(loop >= 0);
  if (loop == 0) {
    std::freopen((dir + "/first.out").c_str(), "w", stdout);
    std::freopen((dir + "/first.out").c_str(), "a", stderr);
    execl(DEEPKF_EXE, DEEPKF_EXE, "learn", (dir + "/loop.json").c_str(), "-o", run.c_str(), nullptr);
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  bool labelled = false;
  int status = 0;
  while (!labelled) {
    if (waitpid(loop, &status, WNOHANG) == loop)
      FAIL("deepkf learn ended before the kill:\n" << read(dir + "/first.out"));
    std::error_code ec;
    labelled = fs::exists(first_label, ec);
    if (std::chrono::steady_clock::now() - start > std::chrono::minutes(8)) {
      kill(loop, SIGKILL);
      FAIL("no label after 8 minutes:\n" << read(dir + "/first.out"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(loop, SIGKILL);
  waitpid(loop, &status, 0);
  const json state = read_json(run / "learn.state.json");
  CHECK(state.at("iteration") == 0);
  CHECK(state.at("done") == "select");  // the label stage was not complete
  CHECK_FALSE(fs::exists(second_label_dir / "result.json"));
  // The CP2K run of the second frame died with the loop.
  for (int i = 0; i < 50 && processes_in(second_label_dir) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(processes_in(second_label_dir) == 0);
  const std::string first_result = read(first_label);
  const auto first_time = fs::last_write_time(first_label);
  const json selected = read_json(run / "iter.000" / "select" / "summary.json").at("frames");
  REQUIRE(selected.size() == 2);

  // Started again: it finishes iteration 0 with the same frames, then iterations 1 and 2.
  const ProgramRun again{{DEEPKF_EXE, "learn", "loop.json", "-o", "run"}, dir, {}, "second.out", 1200};
  const ProgramResult r = run_program(again);
  INFO(failure_text(again, r));
  REQUIRE(r.ok());
  CHECK(read(first_label) == first_result);  // not labelled again
  CHECK(fs::last_write_time(first_label) == first_time);
  CHECK(read_json(run / "iter.000" / "select" / "summary.json").at("frames") == selected);
  CHECK_THAT(read(run / "learn.log"),
             Catch::Contains("cp2k.psmp -i in.inp (in " + second_label_dir.string()));

  // The record: three iterations, the first two labelled.
  std::vector<json> records;
  {
    std::ifstream in(run / "iterations.jsonl");
    for (std::string line; std::getline(in, line);) records.push_back(json::parse(line));
  }
  REQUIRE(records.size() == 3);
  int labelled_total = 0;
  for (int i = 0; i < 3; ++i) {
    INFO("iteration " << i << ": " << records[static_cast<std::size_t>(i)].dump());
    const json& rec = records[static_cast<std::size_t>(i)];
    CHECK(rec.at("explored").get<int>() == 7);  // steps 0, 10, ..., 60
    CHECK(rec.at("explore_failed_runs") == 0);
    CHECK(rec.at("train_frames").get<int>() >= 38);
    CHECK(rec.at("train_rmse_f").get<double>() > 0);
    if (i < 2) {
      CHECK(rec.at("selected") == 2);
      CHECK(rec.at("labelled").get<int>() + rec.at("label_failed").get<int>() == 2);
      CHECK(rec.at("label_cp2k_s").get<double>() > 1.0);
      labelled_total += rec.at("labelled").get<int>();
    } else {
      CHECK_FALSE(rec.contains("labelled"));  // the last round labels nothing
    }
  }
  CHECK(labelled_total >= 3);
  CHECK(fs::file_size(run / "iterations.svg") > 1000);
  CHECK_THAT(read_json(run / "learn.state.json").at("stopped").get<std::string>(),
             Catch::StartsWith("2 labelling iterations done"));

  // The labelled frames of iteration 0 are the frames selected before the kill, with CP2K's labels.
  const json labels0 = read_json(run / "iter.000" / "label" / "summary.json").at("frames");
  const auto stored = Dataset::load({(run / "labels.h5").string() + "#/iter.000"}, {"Si"});
  std::size_t k = 0;
  for (std::size_t f = 0; f < 2; ++f) {
    if (!labels0[f].at("ok").get<bool>()) continue;
    REQUIRE(k < static_cast<std::size_t>(stored.total_frames()));
    const System& s = stored.systems.at(0);
    const auto coord = selected[f].at("coord").get<std::vector<double>>();
    CHECK(std::vector<double>(s.coord.begin() + static_cast<std::ptrdiff_t>(k * 24),
                              s.coord.begin() + static_cast<std::ptrdiff_t>((k + 1) * 24)) == coord);
    CHECK(s.energy[k] == labels0[f].at("energy").get<double>());
    CHECK(s.energy[k] == Approx(-860).margin(20));  // an Si8 cell's CP2K energy, eV (data/si_cp2k.h5: -856)
    ++k;
  }
  const json provenance =
      json::parse(read_hdf5_text_attribute((run / "labels.h5").string(), "/iter.000/Si8", "provenance"));
  REQUIRE(provenance.size() == k);
  CHECK(provenance[0].at("iteration") == 0);
  CHECK(provenance[0].at("run").get<std::string>() == (run / "iter.000" / "explore" / "run_000").string());

  // Iteration 1 continued each member's state on the grown data, the new frames weighted.
  for (int m = 0; m < 2; ++m) {
    const fs::path member = run / "iter.001" / "train" / ("model_" + std::to_string(m));
    const std::string previous =
        (run / "iter.000" / "train" / ("model_" + std::to_string(m)) / "model.ckpt").string();
    CHECK_THAT(read(member / "train.log"), Catch::Contains("continuing from " + previous + " at step 40"));
    const json input = read_json(member / "input.json");
    CHECK(input.at("training").at("numb_steps") == 60);
    CHECK(input.at("training").at("training_data").at("repeat") == json({1, 3}));
    CHECK(input.at("training").at("training_data").at("systems").back() ==
          (run / "labels.h5").string() + "#/iter.000");
    CHECK(input.at("training").at("seed") == 1 + m);
  }
  CHECK(read_json(run / "iter.002" / "train" / "summary.json").at("numb_steps") == 80);

  // A third start has nothing left to do.
  const ProgramRun third{{DEEPKF_EXE, "learn", "loop.json", "-o", "run"}, dir, {}, "third.out", 120};
  CHECK(run_program(third).ok());
  CHECK_THAT(read(fs::path(dir) / "third.out"), Catch::Contains("has already stopped"));
}

TEST_CASE("one model's Kalman sigma chooses the frames to label", "[learn][loop][slow]") {
  require_cp2k();
  const auto dir = test::make_temp_dir("learn-kalman");
  write_inputs(dir);
  json loop = read_json(fs::path(dir) / "loop.json");
  loop["iterations"] = 1;
  loop["train"]["models"] = 1;
  loop["train"].erase("jobs");
  loop["select"].update({{"method", "kalman_sigma"}, {"force_atoms", "all"}, {"max_frames", 1}});
  // So small that the closing round's continued member counts as diverged: the reset path runs for real.
  loop["train"]["reset_factor"] = 1e-6;
  std::ofstream(dir + "/loop.json") << loop.dump(2);
  const ProgramRun learn{{DEEPKF_EXE, "learn", "loop.json", "-o", "run"}, dir, {}, "learn.out", 900};
  const ProgramResult r = run_program(learn);
  INFO(failure_text(learn, r));
  REQUIRE(r.ok());

  const fs::path run = fs::path(dir) / "run";
  const json select = read_json(run / "iter.000" / "select" / "summary.json");
  // The training input has no validation data, so the sigma is in the filter's units (docs/uncertainty.md).
  CHECK(select.at("score") == "max Kalman force sigma (uncalibrated, filter units)");
  CHECK(select.at("explored") == 7);
  REQUIRE(select.at("frames").size() == 1);
  const double picked = select.at("frames")[0].at("score").get<double>();
  CHECK(picked >= select.at("trust_lo").get<double>());
  CHECK(picked < select.at("trust_hi").get<double>());
  // Every explored frame has a positive, finite score, and they differ from frame to frame.
  std::istringstream table(read(run / "iter.000" / "select" / "scores.tsv"));
  std::vector<double> scores;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    int r_index = 0;
    long step = 0;
    double score = 0;
    row >> r_index >> step >> score;
    scores.push_back(score);
  }
  REQUIRE(scores.size() == 7);
  for (const double s : scores) CHECK((std::isfinite(s) && s > 0));
  CHECK(*std::max_element(scores.begin(), scores.end()) > *std::min_element(scores.begin(), scores.end()));
  // One model is trained and drives the MD: no ensemble, no model deviation file.
  CHECK_FALSE(fs::exists(run / "iter.000" / "train" / "model_1"));
  CHECK_FALSE(fs::exists(run / "iter.000" / "explore" / "run_000" / "model_devi.out"));
  // The frame was labelled, and the last round trained on with it.
  const json label = read_json(run / "iter.000" / "label" / "summary.json");
  CHECK(label.at("labelled").get<int>() + label.at("label_failed").get<int>() == 1);
  CHECK(fs::exists(run / "iter.001" / "train" / "model_0" / "model.ckpt"));

  // The closing round's member was "diverged" (reset_factor 1e-6): its continued run is kept, and it was
  // trained again from iteration 0's weights with a fresh covariance, all 60 steps.
  const json trained = read_json(run / "iter.001" / "train" / "summary.json");
  const json& member = trained.at("members").at(0);
  REQUIRE(member.contains("reset"));
  CHECK(member.at("reset").at("previous_rmse_f").get<double>() > 0);
  CHECK(fs::exists(run / "iter.001" / "train" / "model_0.diverged" / "model.ckpt"));
  CHECK_THAT(read(run / "iter.001" / "train" / "model_0.diverged" / "train.log"),
             Catch::Contains("continuing from"));
  const std::string again = read(run / "iter.001" / "train" / "model_0" / "train.log");
  CHECK_THAT(again, Catch::Contains(read_json(run / "iter.000" / "train" / "summary.json")
                                        .at("members")
                                        .at(0)
                                        .at("model")
                                        .get<std::string>()));
  CHECK_THAT(again, !Catch::Contains("continuing from"));
  CHECK(member.at("steps") == 60);
  CHECK(member.at("train_rmse_f").get<double>() > 0);
  CHECK_THAT(read(run / "learn.log"), Catch::Contains("train: member 0 diverged"));
}

TEST_CASE("probabilities by system index in the training input are refused before any work",
          "[learn][loop]") {
  const auto dir = test::make_temp_dir("learn-sys-probs");
  write_inputs(dir);
  json train = read_json(dir + "/train.json");
  train["training"]["training_data"]["sys_probs"] = {0.2, 0.3, 0.5};
  std::ofstream(dir + "/train.json") << train.dump(2);
  const std::string command =
      std::string(DEEPKF_EXE) + " learn " + dir + "/loop.json -o " + dir + "/run 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(output == "deepkf: error: 'training.training_data.sys_probs' in " + dir +
                      "/train.json gives probabilities by system index, which deepkf learn cannot use: each "
                      "round adds the labelled frames as systems of their own, weighed by "
                      "train.new_frame_repeat; remove it\n");
  CHECK_FALSE(fs::exists(fs::path(dir) / "run" / "iter.000"));
}
