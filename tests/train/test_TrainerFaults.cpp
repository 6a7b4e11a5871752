// Training faults on the project's CP2K silicon data (data/si_cp2k.h5): a restart after a run that went on
// past its last checkpoint leaves one learning-curve row per step, and its wall_s goes on from the
// checkpoint's; a restart with nothing left to train is one clear error; a non-finite innovation or loss
// stops the run naming the step and the frames; a given sel smaller than the data's neighbour counts is
// warned about with the number of neighbours cut.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::TrainConfig;
using deepkf::Trainer;
using deepkf::TrainerOptions;
using deepkf::test::config_of;
using deepkf::test::options_in;
using json = nlohmann::json;

namespace {

const std::string kSilicon = std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5";

json small_input(const std::string& optimizer, std::int64_t steps) {
  json doc = json::parse(R"({
    "model": {
      "type_map": ["Si"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                     "axis_neuron": 2, "type_one_side": true, "seed": 3},
      "fitting_net": {"neuron": [8, 8], "seed": 3}
    },
    "training": {"training_data": {"batch_size": 1}, "validation_fraction": 0.2, "seed": 5, "disp_freq": 1,
                 "save_freq": 3, "num_threads": 1}
  })");
  doc["training"]["training_data"]["systems"] = {kSilicon};
  doc["training"]["numb_steps"] = steps;
  if (optimizer == "Adam") {
    doc["optimizer"] = {{"type", "Adam"}};
  } else {
    doc["optimizer"] = {{"type", "RLEKF"}, {"kf_blocksize", 256}, {"p0", 10.0}};
  }
  return doc;
}

// The step column of a learning curve.
std::vector<std::int64_t> lcurve_steps(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<std::int64_t> steps;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::int64_t step = 0;
    words >> step;
    steps.push_back(step);
  }
  return steps;
}

// The column `name` of a learning curve, by row, found by the header's names (its first line).
std::vector<double> lcurve_column(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  REQUIRE(in);
  std::string line;
  REQUIRE(std::getline(in, line));
  std::istringstream names(line.substr(1));
  std::vector<std::string> columns{std::istream_iterator<std::string>(names), {}};
  const auto at = std::find(columns.begin(), columns.end(), name);
  INFO("learning curve header: " << line);
  REQUIRE(at != columns.end());
  const auto index = static_cast<std::size_t>(at - columns.begin());
  std::vector<double> values;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> row{std::istream_iterator<std::string>(words), {}};
    REQUIRE(row.size() == columns.size());
    values.push_back(std::stod(row[index]));
  }
  return values;
}

std::vector<double> lcurve_walls(const std::string& path) { return lcurve_column(path, "wall_s"); }

// The first 3 steps of `config` in `dir`, paused there with a checkpoint.
void run_to_pause(const TrainConfig& config, const std::string& dir,
                  const std::shared_ptr<deepkf::Communicator>& comm) {
  TrainerOptions first = options_in(dir);
  first.pause_at = 3;
  REQUIRE(Trainer(config, first, comm).run().steps == 3);
}

// The message of the deepkf::Error that f throws, or "no error".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const deepkf::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a restart cuts the learning curve back to its checkpoint: every step once, in order",
          "[train][restart][lcurve]") {
  const TrainConfig config = config_of(small_input("RLEKF", 8));
  auto comm = deepkf::make_serial_communicator();

  const std::string straight = deepkf::test::make_temp_dir("lcurve-straight");
  Trainer(config, options_in(straight), comm).run();
  const auto expected = lcurve_steps(straight + "/lcurve.out");
  REQUIRE(expected == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8});

  // A run killed at step 6, after its checkpoint at step 3: its learning curve has rows up to step 6, and the
  // checkpoint it restarts from is at step 3 (here: pause at 3, keep that checkpoint, go on to 6).
  const std::string dir = deepkf::test::make_temp_dir("lcurve-killed");
  TrainerOptions first = options_in(dir);
  first.pause_at = 3;
  REQUIRE(Trainer(config, first, comm).run().steps == 3);
  fs::copy_file(dir + "/model.ckpt", dir + "/step3.ckpt");
  TrainerOptions on = options_in(dir);
  on.restart = dir + "/model.ckpt";
  on.pause_at = 6;
  REQUIRE(Trainer(config, on, comm).run().steps == 6);
  REQUIRE(lcurve_steps(dir + "/lcurve.out") == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});

  TrainerOptions again = options_in(dir);
  again.restart = dir + "/step3.ckpt";
  REQUIRE(Trainer(config, again, comm).run().steps == 8);
  const auto steps = lcurve_steps(dir + "/lcurve.out");
  INFO("learning curve steps after the restart (formerly 1 2 3 4 5 6 4 5 6 7 8)");
  for (std::size_t i = 1; i < steps.size(); ++i) CHECK(steps[i] > steps[i - 1]);
  CHECK(steps == expected);
  fs::remove_all(straight);
  fs::remove_all(dir);
}

TEST_CASE("a restart's learning curve goes on with the wall time of the run it continues",
          "[train][restart][lcurve]") {
  const TrainConfig config = config_of(small_input("RLEKF", 6));
  auto comm = deepkf::make_serial_communicator();
  const std::string dir = deepkf::test::make_temp_dir("lcurve-wall");
  run_to_pause(config, dir, comm);
  const auto before = lcurve_walls(dir + "/lcurve.out");
  REQUIRE(before.size() == 3);
  const json meta = deepkf::read_checkpoint(dir + "/model.ckpt", torch::kCPU).meta;
  // Formerly the checkpoint held no training time, and the restarted run's wall_s began again at 0.
  std::string keys;
  for (const auto& [key, value] : meta.items()) keys += key + " ";
  INFO("keys of the checkpoint's record: " << keys);
  REQUIRE(meta.contains("wall_seconds"));
  const double saved = meta.at("wall_seconds").get<double>();
  CHECK(saved >= before.back() - 0.005);  // wall_s is printed to 0.01 s
  // step_s: the time inside the steps, a part of wall_s, kept in the checkpoint too.
  REQUIRE(meta.contains("step_seconds"));
  const double saved_steps = meta.at("step_seconds").get<double>();
  const auto steps_before = lcurve_column(dir + "/lcurve.out", "step_s");
  CHECK(steps_before.back() > 0.0);
  CHECK(saved_steps >= steps_before.back() - 0.005);
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(steps_before[i] <= before[i] + 0.01);

  TrainerOptions on = options_in(dir);
  on.restart = dir + "/model.ckpt";
  REQUIRE(Trainer(config, on, comm).run().steps == 6);
  const auto walls = lcurve_walls(dir + "/lcurve.out");
  REQUIRE(walls.size() == 6);
  INFO("wall_s after the restart: " << fmt::format("{}", fmt::join(walls, " "))
                                    << " (checkpoint at step 3: " << saved << " s)");
  for (std::size_t i = 3; i < walls.size(); ++i) CHECK(walls[i] >= saved - 0.005);
  for (std::size_t i = 1; i < walls.size(); ++i) CHECK(walls[i] >= walls[i - 1]);
  const auto step_s = lcurve_column(dir + "/lcurve.out", "step_s");
  for (std::size_t i = 3; i < step_s.size(); ++i) CHECK(step_s[i] >= saved_steps - 0.005);
  for (std::size_t i = 1; i < step_s.size(); ++i) CHECK(step_s[i] >= step_s[i - 1]);
  for (std::size_t i = 0; i < step_s.size(); ++i) CHECK(step_s[i] <= walls[i] + 0.01);
  fs::remove_all(dir);
}

TEST_CASE("a restart appends to a learning curve without step_s in that file's columns",
          "[train][restart][lcurve]") {
  const TrainConfig config = config_of(small_input("RLEKF", 6));
  auto comm = deepkf::make_serial_communicator();
  const std::string dir = deepkf::test::make_temp_dir("lcurve-old-columns");
  run_to_pause(config, dir, comm);
  // The file as a version before step_s wrote it: the header and every row without their last column.
  const std::string path = dir + "/lcurve.out";
  std::ifstream in(path);
  std::string old, line;
  while (std::getline(in, line)) {
    if (line.rfind("#  step", 0) == 0 || (!line.empty() && line[0] != '#'))
      line = line.substr(0, line.find_last_not_of(' ', line.find_last_of(' ')) + 1);
    old += line + "\n";
  }
  in.close();
  REQUIRE(old.find("step_s") == std::string::npos);
  std::ofstream(path) << old;

  TrainerOptions on = options_in(dir);
  on.restart = dir + "/model.ckpt";
  REQUIRE(Trainer(config, on, comm).run().steps == 6);
  // Every row has the header's columns (lcurve_column requires it), wall_s still the last.
  CHECK(lcurve_walls(path).size() == 6);
  fs::remove_all(dir);
}

TEST_CASE("restarting with numb_steps not above the checkpoint's step says so", "[train][restart][errors]") {
  auto comm = deepkf::make_serial_communicator();
  const std::string dir = deepkf::test::make_temp_dir("restart-done");
  Trainer(config_of(small_input("RLEKF", 2)), options_in(dir), comm).run();
  TrainerOptions again = options_in(dir);
  again.restart = dir + "/model.ckpt";
  for (const std::int64_t steps : {2, 1}) {
    INFO("numb_steps " << steps);
    // Formerly: nothing trained, then "filesystem error: cannot make absolute path" as an internal error.
    Trainer resumed(config_of(small_input("RLEKF", steps)), again, comm);
    const std::string message = error_of([&] { resumed.run(); });
    CHECK(message == "checkpoint " + dir + "/model.ckpt is at step 2 and 'training.numb_steps' in " +
                         "test-input.json is " + std::to_string(steps) +
                         ": nothing is left to train; set numb_steps above 2 to continue the run (or use "
                         "--init-model to start a new one from its weights)");
  }
  fs::remove_all(dir);
}

TEST_CASE("a non-finite innovation or loss stops training naming the step and the frames",
          "[train][errors][nonfinite]") {
  auto comm = deepkf::make_serial_communicator();
  const std::string dir = deepkf::test::make_temp_dir("nan-training");
  {
    // A model file whose first weight is nan, as a start for --init-model.
    deepkf::DeepPot model(deepkf::test::small_silicon_config(40));
    torch::NoGradGuard no_grad;
    model->parameters().front().view({-1})[0] = std::nan("");
    deepkf::save_model(dir + "/nan.pt", model, json::object());
  }
  for (const std::string optimizer : {"RLEKF", "Adam"}) {
    SECTION(optimizer) {
      TrainerOptions o = options_in(dir + "/" + optimizer);
      o.init_model = dir + "/nan.pt";
      Trainer trainer(config_of(small_input(optimizer, 4)), o, comm);
      const std::string message = error_of([&] { trainer.run(); });
      INFO(message);
      // Formerly (RLEKF): "kalman update 0: innovation e is nan", naming no step or frame; Adam trained on.
      CHECK_THAT(message, Catch::Matchers::StartsWith("training stopped at step 1: "));
      // RLEKF: "innovation e is nan" (sequential) or "innovation e of measurement 0 is nan" (joint).
      if (optimizer == "RLEKF") {
        CHECK_THAT(message, Contains("innovation e ") && Contains(" is nan"));
      } else {
        CHECK_THAT(message, Contains("the loss is not finite"));
      }
      CHECK_THAT(message, Contains(" of " + kSilicon + "#/"));
      CHECK_THAT(message, Contains("last checkpoint: none written"));
      CHECK_FALSE(fs::exists(dir + "/" + optimizer + "/model.ckpt"));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("a given sel smaller than the data's neighbour counts is warned about with the count cut",
          "[train][data][sel]") {
  auto comm = deepkf::make_serial_communicator();
  std::ostringstream text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  spdlog::logger log("test", sink);
  json doc = small_input("RLEKF", 1);
  doc["training"].erase("validation_fraction");
  const TrainConfig config = config_of(doc);
  const auto data = deepkf::open_training_data(config, *comm, log);

  // The neighbours within rcut of every atom of every frame, counted by brute force over periodic images.
  const double rcut = 4.0;
  std::int64_t total = 0, beyond4 = 0, frames_cut = 0, frames = 0;
  for (const auto& part : data.train) {
    const deepkf::System s = part.read_range(0, part.nframes());
    for (std::int64_t f = 0; f < s.nframes; ++f, ++frames) {
      const double* x = s.coord.data() + 3 * s.natoms * f;
      const double* h = s.box.data() + 9 * f;
      std::int64_t cut_here = 0;
      for (std::int64_t i = 0; i < s.natoms; ++i) {
        std::int64_t n = 0;
        for (std::int64_t j = 0; j < s.natoms; ++j)
          for (int a = -3; a <= 3; ++a)
            for (int b = -3; b <= 3; ++b)
              for (int c = -3; c <= 3; ++c) {
                if (i == j && a == 0 && b == 0 && c == 0) continue;
                double r2 = 0.0;
                for (int d = 0; d < 3; ++d) {
                  const double r = x[3 * j + d] + a * h[d] + b * h[3 + d] + c * h[6 + d] - x[3 * i + d];
                  r2 += r * r;
                }
                if (r2 < rcut * rcut) ++n;
              }
        total += n;
        cut_here += std::max<std::int64_t>(0, n - 4);
      }
      beyond4 += cut_here;
      frames_cut += cut_here > 0 ? 1 : 0;
    }
  }
  REQUIRE(beyond4 > 0);

  deepkf::ModelConfig small = deepkf::test::small_silicon_config(4);
  deepkf::resolve_sel(small, data.train, *comm, log);
  log.flush();
  // Formerly: no word; the neighbours beyond sel were dropped silently.
  INFO(text.str());
  CHECK_THAT(text.str(),
             Contains("sel [4] is smaller than the training data's neighbour counts within rcut 4 A"));
  CHECK_THAT(text.str(), Contains(fmt::format("{} of {} neighbours", beyond4, total)));
  CHECK_THAT(text.str(), Contains(fmt::format("in {} of {} frames are cut", frames_cut, frames)));
  CHECK(small.sel == std::vector<int>{4});  // a given sel stays as given

  text.str("");
  deepkf::ModelConfig enough = deepkf::test::small_silicon_config(200);
  deepkf::resolve_sel(enough, data.train, *comm, log);
  log.flush();
  CHECK(text.str().find("is smaller") == std::string::npos);
}

TEST_CASE("a disk too small for the checkpoints stops the run before its first step", "[train][disk]") {
  const auto dir = deepkf::test::make_temp_dir("disk");
  // 10 steps, a checkpoint every 3: two exist at once while the second replaces the first.
  json doc = small_input("RLEKF", 10);
  auto comm = deepkf::make_serial_communicator();
  ::setenv("DEEPKF_AVAILABLE_DISK", "1MiB", 1);
  Trainer trainer(config_of(doc), options_in(dir, true), comm);
  const std::string message = error_of([&] { trainer.run(); });
  ::unsetenv("DEEPKF_AVAILABLE_DISK");
  CHECK_THAT(message, Catch::Matchers::StartsWith("not enough disk space for the checkpoints in " + dir +
                                                  ": each is ") &&
                          Contains("two exist while one replaces the last") &&
                          Contains("but 1.0 MiB is free") && Contains("deepkf plan shows the sizes"));
  CHECK_FALSE(fs::exists(dir + "/model.ckpt"));
  CHECK_FALSE(fs::exists(dir + "/lcurve.out"));
  // With room for one checkpoint and one write due, the same run goes ahead.
  doc["training"]["save_freq"] = 100;
  ::setenv("DEEPKF_AVAILABLE_DISK", "3MiB", 1);
  Trainer one_write(config_of(doc), options_in(dir, true), comm);
  CHECK(one_write.run().steps == 10);
  ::unsetenv("DEEPKF_AVAILABLE_DISK");
}

TEST_CASE("the model file is written before the last checkpoint, so a failed checkpoint loses nothing",
          "[train][disk]") {
  const auto dir = deepkf::test::make_temp_dir("last-write");
  json doc = small_input("RLEKF", 4);
  doc["training"]["save_freq"] = 100;                          // only the final checkpoint
  doc["training"]["save_ckpt"] = "no-such-folder/model.ckpt";  // which cannot be written
  auto comm = deepkf::make_serial_communicator();
  Trainer trainer(config_of(doc), options_in(dir, true), comm);
  CHECK_THAT(error_of([&] { trainer.run(); }), Contains("no-such-folder/model.ckpt"));
  const auto loaded = deepkf::load_model(dir + "/model.pt", torch::kCPU);
  CHECK(loaded.provenance.at("steps") == 4);
}
