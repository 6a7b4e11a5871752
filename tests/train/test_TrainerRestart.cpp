// Exact restarts on the real silicon dataset (../shared/datasets/si_mlearn): a run stopped by a signal, a
// journal checkpoint (src/train/JournalCheckpoint.hpp), the averaged weights (enable_ema) and the automatic
// p0 go on bit for bit from their checkpoint; checkpoints written in the background leave training as it was.
#include <filesystem>
#include <fstream>

#include "src/core/Communicator.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/StopSignal.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

namespace fs = std::filesystem;
using deepkf::TrainConfig;
using deepkf::Trainer;
using deepkf::TrainerOptions;
using deepkf::test::config_of;
using deepkf::test::silicon_input;
using json = nlohmann::json;

namespace {

// The run of `config` into a new folder `name`, stopped after its first step as if SIGTERM had arrived:
// its options (to restart from) and its result.
std::pair<TrainerOptions, deepkf::TrainResult> stop_after_first_step(
    const TrainConfig& config, const std::string& name, const std::shared_ptr<deepkf::Communicator>& comm) {
  TrainerOptions first;
  first.output_dir = deepkf::test::make_temp_dir(name);
  first.progress = 0;
  Trainer stopped(config, first, comm);
  deepkf::StopSignal::raise_for_test(15);
  const auto part = stopped.run();
  deepkf::StopSignal::reset();
  return {first, part};
}

}  // namespace

TEST_CASE("a run stopped by a signal restarts from its checkpoint to bit-identical weights",
          "[train][restart]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  const std::vector<std::string> train = {si + "/train/sys_Si12", si + "/train/sys_Si16",
                                          si + "/train/sys_Si24"};
  const std::vector<std::string> valid = {si + "/test"};
  for (const std::string optimizer : {"LKF", "Adam"}) {
    SECTION(optimizer) {
      // On the CPU: a GPU sums the model's gradients with atomic additions, whose order (and so the last
      // bits) changes from run to run, so there a restarted run matches an uninterrupted one to rounding
      // only.
      json doc = silicon_input(train, valid, optimizer, 8);
      doc["device"] = "cpu";
      const TrainConfig config = config_of(doc);
      auto comm = deepkf::make_serial_communicator();

      TrainerOptions straight;
      straight.output_dir = deepkf::test::make_temp_dir("straight");
      straight.progress = 0;
      Trainer uninterrupted(config, straight, comm);
      const auto full = uninterrupted.run();
      REQUIRE(full.steps == 8);
      REQUIRE_FALSE(full.interrupted);
      CHECK(fs::exists(full.model));

      // The same run, stopped after its first step as if SIGTERM had arrived, then restarted.
      const auto [first, part] = stop_after_first_step(config, "stopped", comm);
      REQUIRE(part.interrupted);
      REQUIRE(part.steps == 1);
      REQUIRE(fs::exists(part.checkpoint));
      CHECK(part.model.empty());

      TrainerOptions again = first;
      again.restart = part.checkpoint;
      Trainer resumed(config, again, comm);
      CHECK(resumed.step() == 1);
      const auto rest = resumed.run();
      CHECK(rest.steps == 8);
      INFO("largest weight difference between the restarted and the uninterrupted run");
      CHECK(deepkf::test::max_abs_difference(resumed.flat_parameters(), uninterrupted.flat_parameters()) ==
            0.0);
    }
  }
}

TEST_CASE("checkpoints written in the background leave training as it was and are said in the log",
          "[train][checkpoint]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  json doc = silicon_input({si + "/train/sys_Si12", si + "/train/sys_Si16"}, {si + "/test"}, "LKF", 7);
  doc["device"] = "cpu";
  doc["training"]["save_freq"] = 3;  // saves at steps 3 and 6 in the background, 7 (the last) at once
  auto comm = deepkf::make_serial_communicator();
  std::vector<std::vector<double>> weights;
  for (const bool background : {false, true}) {
    doc["training"]["save_in_background"] = background;
    const auto o = deepkf::test::options_in(
        deepkf::test::make_temp_dir(background ? "ckpt-background" : "ckpt-foreground"), true);
    Trainer trainer(config_of(doc), o, comm);
    const auto result = trainer.run();
    weights.push_back(trainer.flat_parameters());
    const std::string log = deepkf::test::read_text(o.output_dir + "/train.log");
    INFO(log);
    for (const int step : {3, 6}) {
      const std::string copied = "at step " + std::to_string(step) + ": covariance copied in";
      const std::string written = "written at step " + std::to_string(step) + " (";
      CHECK((log.find(copied) != std::string::npos) == background);
      CHECK(log.find(written) != std::string::npos);
    }
    CHECK(log.find("written at step 7 (") != std::string::npos);
    CHECK(deepkf::read_checkpoint(result.checkpoint, torch::kCPU).meta.at("step") == 7);
  }
  INFO("largest weight difference between the runs with checkpoints in the foreground and the background");
  CHECK(deepkf::test::max_abs_difference(weights[0], weights[1]) == 0.0);
}

TEST_CASE("enable_ema writes model_ema.pt, and a restart continues the average bit for bit", "[train][ema]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  json doc = silicon_input({si + "/train/sys_Si12", si + "/train/sys_Si16"}, {si + "/test"}, "LKF", 6);
  doc["device"] = "cpu";  // bit for bit: the CPU (see the test above)
  doc["training"]["enable_ema"] = true;
  doc["training"]["ema_decay"] = 0.8;
  const TrainConfig config = config_of(doc);
  auto comm = deepkf::make_serial_communicator();
  using deepkf::test::model_file_weights;

  const TrainerOptions straight = deepkf::test::options_in(deepkf::test::make_temp_dir("ema-straight"), true);
  Trainer uninterrupted(config, straight, comm);
  const auto full = uninterrupted.run();
  REQUIRE(full.model_average == straight.output_dir + "/model_ema.pt");
  REQUIRE(fs::exists(full.model_average));
  CHECK(full.validation_average.e_count > 0);
  const auto live = deepkf::load_model(full.model, torch::kCPU);
  const auto averaged = deepkf::load_model(full.model_average, torch::kCPU);
  // Other weights, the same statistics and energy bias.
  CHECK(deepkf::test::max_abs_difference(model_file_weights(full.model),
                                         model_file_weights(full.model_average)) > 0.0);
  const auto lb = live.model->named_buffers(), ab = averaged.model->named_buffers();
  for (const auto& b : lb) CHECK(torch::equal(b.value(), ab[b.key()]));

  const auto [first, part] = stop_after_first_step(config, "ema-stopped", comm);
  REQUIRE(part.interrupted);
  TrainerOptions again = first;
  again.restart = part.checkpoint;
  Trainer resumed(config, again, comm);
  const auto rest = resumed.run();
  REQUIRE(fs::exists(rest.model_average));
  INFO("largest difference between the averaged weights of the restarted and the uninterrupted run");
  CHECK(deepkf::test::max_abs_difference(model_file_weights(rest.model_average),
                                         model_file_weights(full.model_average)) == 0.0);
}

TEST_CASE("the automatic p0 is chosen once, recorded, and kept by a restart", "[train][restart][p0]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  const std::vector<std::string> train = {si + "/train/sys_Si12", si + "/train/sys_Si24"};
  auto comm = deepkf::make_serial_communicator();
  const auto resolved_p0 = [](const std::string& dir) {
    std::ifstream in(dir + "/input.resolved.json");
    return json::parse(in)["optimizer"]["p0"];
  };
  // The sequential filter with P = p0 I, and the joint one with the shaped P = p0 diag(d): a restart takes
  // P from the checkpoint and must not shape it again.
  for (const std::string shape : {"identity", "layer"}) {
    INFO("p0_shape " << shape);
    json doc = silicon_input(train, {si + "/test"}, "LKF", 4);
    doc["optimizer"].erase("p0");
    doc["optimizer"]["p0_shape"] = shape;
    if (shape != "identity") doc["optimizer"]["kf_update"] = "joint";
    const TrainConfig config = config_of(doc);

    TrainerOptions straight;
    straight.output_dir = deepkf::test::make_temp_dir("p0-straight-" + shape);
    straight.progress = 0;
    Trainer uninterrupted(config, straight, comm);
    uninterrupted.run();
    const json p0 = resolved_p0(straight.output_dir);
    REQUIRE(p0.is_number());
    CHECK(p0.get<double>() > 0.0);

    TrainerOptions first;
    first.output_dir = deepkf::test::make_temp_dir("p0-stopped-" + shape);
    first.progress = 0;
    first.pause_at = 2;
    Trainer stopped(config, first, comm);
    const auto part = stopped.run();
    REQUIRE(part.steps == 2);
    TrainerOptions again = first;
    again.pause_at = 0;
    again.restart = part.checkpoint;
    Trainer resumed(config, again, comm);
    resumed.run();
    INFO("p0 of the uninterrupted run " << p0 << ", of the restarted run " << resolved_p0(first.output_dir));
    CHECK(resolved_p0(first.output_dir) == p0);
    CHECK(deepkf::test::max_abs_difference(resumed.flat_parameters(), uninterrupted.flat_parameters()) ==
          0.0);
  }
}

TEST_CASE("journal checkpoints complete a step later, leave training as it was, and restore bit for bit",
          "[train][restart][journal]") {
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  for (const std::string update : {"sequential", "joint"}) {
    SECTION(update) {
      json doc = silicon_input({si + "/train/sys_Si12", si + "/train/sys_Si16"}, {si + "/test"}, "LKF", 8);
      doc["device"] = "cpu";
      doc["optimizer"]["kf_update"] = update;
      doc["training"]["save_freq"] = 4;
      auto comm = deepkf::make_serial_communicator();
      doc["training"]["save_in_background"] = false;
      const auto straight = deepkf::test::options_in(deepkf::test::make_temp_dir("journal-straight"));
      Trainer uninterrupted(config_of(doc), straight, comm);
      uninterrupted.run();

      // The journal checkpoint begun at step 4 completes at step 5 (its blocks are written well within a
      // step here), where the run pauses: that checkpoint is the one the pause leaves.
      doc["training"]["save_in_background"] = "journal";
      auto first = deepkf::test::options_in(deepkf::test::make_temp_dir("journal-paused"));
      first.pause_at = 5;
      Trainer paused(config_of(doc), first, comm);
      const auto part = paused.run();
      REQUIRE(part.steps == 5);
      const std::string log = deepkf::test::read_text(first.output_dir + "/train.log");
      INFO(log);
      CHECK(log.find("at step 4: the covariance is written from the live blocks") != std::string::npos);
      CHECK(log.find("written at step 5 (") != std::string::npos);
      CHECK(log.find("begun at step 4, the covariance written from the live blocks") != std::string::npos);
      CHECK(deepkf::read_checkpoint(part.checkpoint, torch::kCPU).meta.at("step") == 5);

      auto again = first;
      again.pause_at = 0;
      again.restart = part.checkpoint;
      Trainer resumed(config_of(doc), again, comm);
      CHECK(resumed.step() == 5);
      resumed.run();
      INFO(
          "largest weight difference between the run restored from a journal checkpoint and the straight "
          "one");
      CHECK(deepkf::test::max_abs_difference(resumed.flat_parameters(), uninterrupted.flat_parameters()) ==
            0.0);
    }
  }
}
