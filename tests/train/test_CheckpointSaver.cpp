// Checkpoints written in the background (src/train/CheckpointSaver.hpp): the file holds the covariance as it
// was at the save while the filter goes on updating it, one write is in flight at a time, the last
// checkpoint is complete when save() returns, the foreground mode writes before returning, and a write that
// fails in the thread fails the run at the next wait, naming the file. A journal checkpoint
// (src/train/JournalCheckpoint.hpp) holds P as it is when it completes, and a filter loaded from it goes on
// as the one that wrote it, bit for bit.
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/CheckpointSaver.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using deepkf::CheckpointSaver;
using deepkf::KalmanFilter;

namespace {

// A training step that is only a Kalman filter's state: what checkpoints see of RLEKF.
class FilterStep final : public deepkf::TrainingStep {
 public:
  explicit FilterStep(deepkf::DeepPot& model) {
    deepkf::KalmanOptions o;
    o.blocksize = 64;
    o.p0 = 2.0;
    kf = std::make_unique<KalmanFilter>(model->parameters(), o);
    for (const auto& p : model->parameters()) shapes.push_back(p);
  }
  // One scalar update with random gradients: changes every block of P.
  void advance(double e) {
    std::vector<torch::Tensor> grads;
    for (const auto& p : shapes) grads.push_back(torch::randn_like(p));
    kf->update(e, grads);
  }
  std::vector<torch::Tensor> blocks() {
    std::vector<torch::Tensor> out;
    for (std::int64_t i = 0; i < kf->layout().num_blocks(); ++i)
      out.push_back(kf->packed_covariance(i).clone());
    return out;
  }

  std::string name() const override { return "RLEKF"; }
  std::string describe() const override { return ""; }
  nlohmann::json settings() const override { return nlohmann::json::object(); }
  deepkf::ErrorMetrics take(const deepkf::StepInput&) override { return {}; }
  bool batch_errors() const override { return false; }
  std::string status_name() const override { return "lambda"; }
  double status_value(std::int64_t) const override { return kf->lambda(); }
  void save(torch::serialize::OutputArchive& archive) override { kf->save_state(archive); }
  std::vector<std::int64_t> block_sizes() const override {
    std::vector<std::int64_t> sizes;
    for (const auto& b : kf->layout().blocks()) sizes.push_back(b.size());
    return sizes;
  }
  void stream_blocks(const deepkf::BlockSink& sink) override { kf->stream_covariance(sink); }
  void load(torch::serialize::InputArchive& archive, const deepkf::BlockSource& read_block) override {
    kf->load(archive, read_block);
  }
  bool begin_journal() override { return kf->begin_journal(); }
  std::int64_t copy_block(std::int64_t i, void* into) const override { return kf->copy_block(i, into); }
  deepkf::CovarianceJournal end_journal() override { return kf->end_journal(); }

  std::unique_ptr<KalmanFilter> kf;
  std::vector<torch::Tensor> shapes;
};

void check_blocks(const std::string& path, const std::vector<torch::Tensor>& expected) {
  const auto ckpt = deepkf::read_checkpoint(path, torch::kCPU);
  REQUIRE(ckpt.covariance_blocks == static_cast<std::int64_t>(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(torch::equal(ckpt.covariance_block(static_cast<std::int64_t>(i)), expected[i]));
}

struct Written {
  std::string path;
  std::int64_t step = -1, bytes = 0;
  int calls = 0;
};

}  // namespace

TEST_CASE("a background checkpoint holds P as it was at the save while the filter goes on",
          "[train][checkpoint]") {
  torch::manual_seed(3);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-saver");
  const std::string path = dir + "/model.ckpt";
  deepkf::DeepPot model(deepkf::test::small_silicon_config(8));
  FilterStep step(model);
  step.advance(0.1);
  auto comm = deepkf::make_serial_communicator();
  Written written;
  CheckpointSaver saver(CheckpointSaver::Mode::kBackground,
                        [&](const std::string& p, std::int64_t at, std::int64_t bytes, double) {
                          written = {p, at, bytes, written.calls + 1};
                        });

  const auto at_save = step.blocks();
  const auto report =
      saver.save(path, 5, model, deepkf::test::checkpoint_meta(model, 5), step, *comm, nullptr, false);
  CHECK(report.background);
  // The filter goes on while the thread writes: the file must not see these updates.
  for (int k = 0; k < 3; ++k) step.advance(0.2 * (k + 1));
  const auto later = step.blocks();
  REQUIRE_FALSE(torch::equal(later[0], at_save[0]));
  saver.wait(*comm);
  CHECK(written.calls == 1);
  CHECK(written.path == path);
  CHECK(written.step == 5);
  CHECK(written.bytes == static_cast<std::int64_t>(fs::file_size(path)));
  check_blocks(path, at_save);
  CHECK(deepkf::read_checkpoint(path, torch::kCPU).meta.at("step") == 5);

  // A second background save replaces the first (the same buffer, reused); the last one is written before
  // save() returns and reports no background work.
  CHECK(saver.save(path, 6, model, deepkf::test::checkpoint_meta(model, 6), step, *comm, nullptr, false)
            .background);
  step.advance(0.5);
  const auto at_last = step.blocks();
  const auto last =
      saver.save(path, 7, model, deepkf::test::checkpoint_meta(model, 7), step, *comm, nullptr, true);
  CHECK_FALSE(last.background);
  CHECK(written.calls == 2);  // the step-6 write was waited for before the last one began
  CHECK(written.step == 6);
  check_blocks(path, at_last);
  CHECK(deepkf::read_checkpoint(path, torch::kCPU).meta.at("step") == 7);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST_CASE("checkpoints in the foreground are complete on return, and 'auto' leaves small covariances there",
          "[train][checkpoint]") {
  torch::manual_seed(4);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-saver-fg");
  const std::string path = dir + "/model.ckpt";
  deepkf::DeepPot model(deepkf::test::small_silicon_config(8));
  FilterStep step(model);
  step.advance(0.1);
  auto comm = deepkf::make_serial_communicator();
  int calls = 0;
  const auto count = [&](const std::string&, std::int64_t, std::int64_t, double) { ++calls; };
  for (const auto mode : {CheckpointSaver::Mode::kForeground, CheckpointSaver::Mode::kAuto}) {
    CheckpointSaver saver(mode, count);
    const auto expected = step.blocks();
    // This model's covariance is far below kMinBackgroundBytes, so "auto" writes it at once too.
    CHECK_FALSE(
        saver.save(path, 3, model, deepkf::test::checkpoint_meta(model, 3), step, *comm, nullptr, false)
            .background);
    check_blocks(path, expected);
    step.advance(0.3);
  }
  CHECK(calls == 0);
  CHECK(deepkf::checkpoint_saver_mode(true) == CheckpointSaver::Mode::kBackground);
  CHECK(deepkf::checkpoint_saver_mode(false) == CheckpointSaver::Mode::kForeground);
  CHECK(deepkf::checkpoint_saver_mode("auto") == CheckpointSaver::Mode::kAuto);
  fs::remove_all(dir);
}

TEST_CASE("a background checkpoint that cannot be completed fails the run at the next wait, naming it",
          "[train][checkpoint]") {
  torch::manual_seed(5);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-saver-fail");
  const std::string out = dir + "/out";
  fs::create_directories(out);
  const std::string path = out + "/model.ckpt";
  deepkf::DeepPot model(deepkf::test::small_silicon_config(8));
  FilterStep step(model);
  auto comm = deepkf::make_serial_communicator();
  CheckpointSaver saver(CheckpointSaver::Mode::kBackground, nullptr);
  REQUIRE(saver.save(path, 2, model, deepkf::test::checkpoint_meta(model, 2), step, *comm, nullptr, false)
              .background);
  fs::remove_all(out);  // the folder goes away under the writer: its rename cannot succeed
  CHECK_THROWS_WITH(saver.wait(*comm), Contains(path));
  CHECK_NOTHROW(saver.wait(*comm));  // reported once
  fs::remove_all(dir);
}

namespace {

// Polls until the journal checkpoint in flight completes (its thread writes a few small blocks).
CheckpointSaver::Report poll_until_complete(CheckpointSaver& saver, deepkf::DeepPot& model,
                                            std::int64_t step) {
  for (int tries = 0; tries < 2000; ++tries) {
    if (auto done = saver.poll(
            model, [&] { return deepkf::test::checkpoint_meta(model, step); }, nullptr))
      return *done;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  FAIL("the journal checkpoint did not complete within 10 s");
  return {};
}

}  // namespace

TEST_CASE(
    "a journal checkpoint holds P as it is when it completes, and a filter loaded from it goes on alike",
    "[train][checkpoint][journal]") {
  torch::manual_seed(6);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-journal");
  const std::string path = dir + "/model.ckpt";
  deepkf::DeepPot model(deepkf::test::small_silicon_config(8));
  FilterStep step(model);
  step.advance(0.1);
  auto comm = deepkf::make_serial_communicator();
  CheckpointSaver saver(CheckpointSaver::Mode::kJournal, nullptr);
  const auto report =
      saver.save(path, 5, model, deepkf::test::checkpoint_meta(model, 5), step, *comm, nullptr, false);
  CHECK(report.journal);
  CHECK(report.background);
  // The filter goes on while the thread writes; the checkpoint completes after these updates.
  for (int k = 0; k < 3; ++k) step.advance(0.2 * (k + 1));
  const auto done = poll_until_complete(saver, model, 8);
  CHECK(done.begun_at == 5);
  CHECK(done.bytes == static_cast<std::int64_t>(fs::file_size(path)));
  auto ckpt = deepkf::read_checkpoint(path, torch::kCPU);
  CHECK(ckpt.meta.at("step") == 8);
  CHECK(ckpt.meta.at("format_version") == deepkf::kCheckpointFormatVersion);
  deepkf::DeepPot copy(deepkf::test::small_silicon_config(8));
  FilterStep loaded(copy);
  loaded.load(ckpt.optimizer, ckpt.covariance_block);
  const auto live = step.blocks(), restored = loaded.blocks();
  REQUIRE(live.size() == restored.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    INFO("block " << i);
    CHECK(torch::equal(live[i], restored[i]));
  }
  // export-style readers see every block's checksum hold.
  for (std::int64_t i = 0; i < ckpt.covariance_blocks; ++i) CHECK_NOTHROW(ckpt.covariance_block(i));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  fs::remove_all(dir);
}

TEST_CASE(
    "a save while a journal checkpoint is in flight completes it there, and an unfinished one is dropped",
    "[train][checkpoint][journal]") {
  torch::manual_seed(7);
  const std::string dir = deepkf::test::make_temp_dir("checkpoint-journal-save");
  const std::string path = dir + "/model.ckpt";
  deepkf::DeepPot model(deepkf::test::small_silicon_config(8));
  FilterStep step(model);
  auto comm = deepkf::make_serial_communicator();
  {
    CheckpointSaver saver(CheckpointSaver::Mode::kJournal, nullptr);
    REQUIRE(saver.save(path, 2, model, deepkf::test::checkpoint_meta(model, 2), step, *comm, nullptr, false)
                .journal);
    step.advance(0.3);
    const auto last =
        saver.save(path, 3, model, deepkf::test::checkpoint_meta(model, 3), step, *comm, nullptr, true);
    CHECK(last.begun_at == 2);
    CHECK(deepkf::read_checkpoint(path, torch::kCPU).meta.at("step") == 3);
    CHECK(step.kf->begin_journal());  // the journal ended: a new one can begin
    step.kf->end_journal();
    // One left in flight when the saver goes: the file stays as it was, and the journal ends.
    REQUIRE(saver.save(path, 4, model, deepkf::test::checkpoint_meta(model, 4), step, *comm, nullptr, false)
                .journal);
    step.advance(0.4);
  }
  CHECK(deepkf::read_checkpoint(path, torch::kCPU).meta.at("step") == 3);
  CHECK_NOTHROW(step.advance(0.5));
  CHECK(step.kf->begin_journal());
  step.kf->end_journal();
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);  // no temporary file left behind
  CHECK(deepkf::checkpoint_saver_mode("journal") == CheckpointSaver::Mode::kJournal);
  fs::remove_all(dir);
}
