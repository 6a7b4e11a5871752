// Data-parallel training on 2 ranks (run under mpiexec -n 2) on the real silicon dataset
// (../shared/datasets/si_mlearn), against the same training on one rank:
//   - the same global batches give the same weights (relative 1e-10) and validation errors;
//   - each rank holds about half of the RLEKF covariance and reads about half of the frames (the ranks
//     together read exactly the frames one rank reads);
//   - Adam too, with batches that split unevenly (1 + 2 frames);
//   - a checkpoint written on 1 rank resumes on 2, and one written on 2 resumes on 1, to the weights of
//     the uninterrupted run; a stop signal seen by one rank stops both;
//   - only rank 0 writes files; the training range recorded in the model file is the one rank's;
//   - a failure on one rank only (a missing data set, an unwritable output directory, different data)
//     ends the set-up on both ranks with its message instead of a hang.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"
#include "src/core/MpiCommunicator.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/StopSignal.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

namespace fs = std::filesystem;
using deepkf::Communicator;
using deepkf::TrainConfig;
using deepkf::Trainer;
using deepkf::TrainerOptions;
using deepkf::test::config_of;
using deepkf::test::options_in;
using json = nlohmann::json;

namespace {

constexpr std::int64_t kSteps = 6;

std::string si_dir() { return deepkf::test::require_shared_dataset("si_mlearn"); }

// Training systems: 2, 3 and 57 frames, so batches of 4 frames split 2 + 2, and the short last batches of
// a system 1 + 2 or 0 + 1 (a rank with no frames still takes part in every step).
std::vector<std::string> train_systems() {
  const std::string si = si_dir();
  return {si + "/train/sys_Si16", si + "/train/sys_Si24", si + "/train/sys_Si63"};
}

// The small se_e2_a model of the trainer's tests (silicon_input), float64, RLEKF with p0 = 100, global
// batches of 4 frames. The Kalman prefactors are constant (the defaults), so numb_steps does not change the
// steps before it and a shorter run is a prefix of a longer one.
json input_doc(const std::vector<std::string>& train, std::int64_t steps) {
  json doc = deepkf::test::silicon_input(train, {si_dir() + "/test/sys_Si63"}, "LKF", steps);
  doc["model"]["descriptor"]["precision"] = "float64";
  doc["training"]["training_data"]["batch_size"] = 4;
  doc["training"]["validation_data"].update({{"batch_size", 3}, {"numb_btch", 2}});
  doc["training"]["num_threads"] = 1;
  return doc;
}

TrainConfig config(std::int64_t steps) { return config_of(input_doc(train_systems(), steps)); }

std::shared_ptr<Communicator> world() { return std::make_shared<deepkf::MpiCommunicator>(MPI_COMM_WORLD); }

// A string every rank agrees on (rank 0's).
std::string from_root(Communicator& comm, std::string s) {
  std::uint64_t n = s.size();
  comm.broadcast(&n, sizeof n, 0);
  s.resize(n);
  comm.broadcast(s.data(), n, 0);
  return s;
}

// A fresh directory every rank agrees on (made by rank 0).
std::string shared_temp_dir(Communicator& comm, const std::string& tag) {
  return from_root(comm, comm.is_root() ? deepkf::test::make_temp_dir(tag) : std::string());
}

// max |a - b| / max |b|
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

// The uninterrupted single-rank run of kSteps steps (each rank runs it alone; computed once per process).
struct Reference {
  std::vector<double> weights;
  std::int64_t covariance_bytes = 0;
  std::int64_t frames_read = 0;
  deepkf::TrainResult result;
};
const Reference& serial_reference(Communicator& comm) {
  static Reference ref = [&] {
    Reference r;
    const std::string dir =
        deepkf::test::make_temp_dir("trainer-mpi-serial-rank" + std::to_string(comm.rank()));
    Trainer serial(config(kSteps), options_in(dir, true), deepkf::make_serial_communicator());
    r.covariance_bytes = serial.covariance_bytes();
    r.result = serial.run();
    r.weights = serial.flat_parameters();
    r.frames_read = serial.frames_read();
    return r;
  }();
  return ref;
}

// The message of the error that constructing a Trainer throws ("" when it does not throw).
std::string construction_error(const TrainConfig& cfg, const TrainerOptions& opt,
                               std::shared_ptr<Communicator> comm) {
  try {
    Trainer trainer(cfg, opt, std::move(comm));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "2 ranks train to the weights of 1 rank, each with half of the covariance, rank 0 writing the files",
    "[train][mpi]") {
  auto comm = world();
  REQUIRE(comm->size() == 2);
  const int rank = comm->rank();
  INFO("rank " << rank);
  const auto& ref = serial_reference(*comm);
  REQUIRE(ref.result.steps == kSteps);

  const std::string dir = shared_temp_dir(*comm, "trainer-mpi");
  // Rank 1 gets a directory of its own that nobody creates: it must stay absent.
  const std::string out = rank == 0 ? dir + "/run" : dir + "/rank1-must-not-exist";
  Trainer parallel(config(kSteps), options_in(out, true), comm);
  const auto result = parallel.run();
  REQUIRE(result.steps == kSteps);
  const auto weights = parallel.flat_parameters();
  INFO("relative weight difference between 2 ranks and 1 rank after " << kSteps << " steps");
  CHECK(relative_difference(weights, ref.weights) < 1e-10);

  // Every rank holds the same weights (the allgather rebuilt them): compare with rank 0's bit for bit.
  auto root_weights = weights;
  comm->broadcast(root_weights.data(), root_weights.size() * sizeof(double), 0);
  CHECK(root_weights == weights);

  // The validation errors (each validation batch is split over the ranks too) agree with one rank's.
  REQUIRE(result.validation.e_count == ref.result.validation.e_count);
  CHECK(result.validation.rmse_e() == Approx(ref.result.validation.rmse_e()).epsilon(1e-8));
  CHECK(result.validation.rmse_f() == Approx(ref.result.validation.rmse_f()).epsilon(1e-8));

  // Covariance memory: the blocks are split between the ranks, balanced by n^2.
  std::int64_t mine = parallel.covariance_bytes();
  std::int64_t total = mine;
  comm->allreduce_sum(&total, 1);
  INFO("covariance bytes on this rank " << mine << ", on both " << total << ", on one rank alone "
                                        << ref.covariance_bytes);
  CHECK(total == ref.covariance_bytes);
  CHECK(static_cast<double>(mine) > 0.35 * static_cast<double>(ref.covariance_bytes));
  CHECK(static_cast<double>(mine) < 0.65 * static_cast<double>(ref.covariance_bytes));

  // Data: each rank read only its share of the frames (set-up checks, statistics, batches, validation).
  const std::int64_t my_frames = parallel.frames_read();
  std::int64_t all_frames = my_frames;
  comm->allreduce_sum(&all_frames, 1);
  INFO("frames read by this rank " << my_frames << ", by both " << all_frames << ", by one rank alone "
                                   << ref.frames_read);
  CHECK(all_frames == ref.frames_read);
  CHECK(static_cast<double>(my_frames) > 0.35 * static_cast<double>(ref.frames_read));
  CHECK(static_cast<double>(my_frames) < 0.65 * static_cast<double>(ref.frames_read));

  // Files: rank 0's directory has them all, rank 1 wrote nothing.
  comm->barrier();
  if (rank == 0) {
    for (const char* name : {"lcurve.out", "train.log", "model.ckpt", "model.pt", "input.resolved.json"}) {
      INFO(name);
      CHECK(fs::exists(fs::path(out) / name));
    }
    CHECK(result.model == out + "/model.pt");
    // The training range (closest neighbours, min over the ranks' frames) is the one rank's, frames summed.
    const auto range = deepkf::read_model_metadata(result.model)["training_range"];
    CHECK_FALSE(range.is_null());
    CHECK(range == deepkf::read_model_metadata(ref.result.model)["training_range"]);
  } else {
    CHECK_FALSE(fs::exists(out));
    CHECK(result.model.empty());
  }
}

TEST_CASE("the automatic p0 and force noise are the same on 2 ranks as on 1, and so are the weights",
          "[train][mpi][p0]") {
  auto comm = world();
  REQUIRE(comm->size() == 2);
  // The sequential update (the default), and the joint update with the automatic force noise: its m
  // gradients summed over the ranks in one reduction, A summed in block order. Its force gradients by
  // difference divide the gradients' rounding (which depends on how the frames are split) by the
  // difference's step, so 2 ranks and 1 agree to about 1e-8 there instead of 1e-14 (docs/mpi.md).
  // The shaped covariance (p0_shape "layer") takes its d from the same summed probe gradients.
  for (const auto& [joint, gradient, tolerance, shape] :
       {std::tuple{false, "graph", 1e-10, "identity"}, std::tuple{true, "graph", 1e-10, "identity"},
        std::tuple{true, "difference", 1e-6, "identity"}, std::tuple{true, "graph", 1e-10, "layer"}}) {
    INFO((joint ? "kf_update joint, force_noise auto" : "kf_update sequential")
         << ", force_gradient " << gradient << ", p0_shape " << shape);
    json doc = input_doc(train_systems(), 3);
    doc["optimizer"].erase("p0");
    doc["optimizer"]["force_gradient"] = gradient;
    doc["optimizer"]["p0_shape"] = shape;
    if (joint) {
      doc["optimizer"]["kf_update"] = "joint";
      doc["optimizer"]["force_noise"] = "auto";
    }
    const auto resolved = [](const std::string& dir) {
      std::ifstream in(dir + "/input.resolved.json");
      return json::parse(in)["optimizer"];
    };
    const std::string tag =
        std::string(joint ? "joint-" : "") + gradient + "-" + shape + "-rank" + std::to_string(comm->rank());
    const std::string serial_dir = deepkf::test::make_temp_dir("p0-serial-" + tag);
    Trainer serial(config_of(doc), options_in(serial_dir, true), deepkf::make_serial_communicator());
    serial.run();
    const std::string dir =
        shared_temp_dir(*comm, std::string(joint ? "p0-mpi-joint-" : "p0-mpi-") + gradient + "-" + shape);
    Trainer parallel(config_of(doc), options_in(dir, true), comm);
    parallel.run();
    const json p0_serial = resolved(serial_dir)["p0"];
    REQUIRE(p0_serial.is_number());
    CHECK(p0_serial.get<double>() > 0.0);
    if (comm->is_root()) {
      INFO("p0 chosen on 1 rank " << p0_serial << ", on 2 ranks " << resolved(dir)["p0"]);
      CHECK(resolved(dir)["p0"].get<double>() == Approx(p0_serial.get<double>()).epsilon(1e-12));
      if (joint) {
        const json noise = resolved(serial_dir)["force_noise"];
        REQUIRE(noise.is_number());
        CHECK(resolved(dir)["force_noise"].get<double>() == Approx(noise.get<double>()).epsilon(1e-12));
      }
    }
    INFO("relative weight difference between 2 ranks and 1 rank with the automatic p0");
    CHECK(relative_difference(parallel.flat_parameters(), serial.flat_parameters()) < tolerance);
  }
}

TEST_CASE("Adam on 2 ranks equals 1 rank when the batches split unevenly, and so does the weights' average",
          "[train][mpi][adam][ema]") {
  auto comm = world();
  REQUIRE(comm->size() == 2);
  INFO("rank " << comm->rank());
  // Batches of 3 frames split 1 + 2 (and Si16's 2 frames 1 + 1): the loss is a mean over frames, so each
  // rank's gradient must count by its share of the frames, not by 1/R.
  json doc = input_doc(train_systems(), kSteps);
  doc["training"]["training_data"]["batch_size"] = 3;
  doc["optimizer"] = {{"type", "Adam"},
                      {"learning_rate", {{"start_lr", 1e-3}, {"stop_lr", 1e-4}, {"decay_steps", 2}}}};
  doc["training"]["enable_ema"] = true;
  doc["training"]["ema_decay"] = 0.5;
  const TrainConfig cfg = config_of(doc);
  const std::string dir = shared_temp_dir(*comm, "trainer-mpi-adam");

  Trainer serial(cfg, options_in(dir + "/serial-rank" + std::to_string(comm->rank()), true),
                 deepkf::make_serial_communicator());
  const auto one = serial.run();
  Trainer parallel(cfg, options_in(dir + "/parallel", true), comm);
  const auto result = parallel.run();
  REQUIRE(result.steps == kSteps);
  CHECK(parallel.covariance_bytes() == 0);
  INFO("relative weight difference between 2 ranks and 1 rank after " << kSteps << " Adam steps");
  CHECK(relative_difference(parallel.flat_parameters(), serial.flat_parameters()) < 1e-10);
  // The average of the weights (enable_ema): written by rank 0 only, equal to the one rank's.
  if (comm->rank() == 0) {
    REQUIRE(fs::exists(result.model_average));
    const auto averaged = deepkf::test::model_file_weights(result.model_average);
    CHECK(relative_difference(averaged, deepkf::test::model_file_weights(one.model_average)) < 1e-10);
    CHECK(relative_difference(averaged, parallel.flat_parameters()) > 1e-6);
  }
}

TEST_CASE("a checkpoint written on 1 rank resumes on 2 ranks, and one written on 2 resumes on 1",
          "[train][mpi][restart]") {
  auto comm = world();
  REQUIRE(comm->size() == 2);
  const int rank = comm->rank();
  INFO("rank " << rank);
  const auto& ref = serial_reference(*comm);
  const std::string dir = shared_temp_dir(*comm, "trainer-mpi-restart");

  SECTION("1 rank for 3 steps, then 2 ranks to the end") {
    std::string checkpoint;
    if (rank == 0) {
      // A run that reaches its numb_steps shifts its energy bias (change_bias_after_training) and a restart
      // that extends it goes on from there; without the shift this is a run stopped at step 3.
      TrainConfig three = config(3);
      three.change_bias_after_training = false;
      Trainer first(three, options_in(dir + "/first", true), deepkf::make_serial_communicator());
      const auto part = first.run();
      REQUIRE(part.steps == 3);
      checkpoint = part.checkpoint;
    }
    checkpoint = from_root(*comm, checkpoint);
    REQUIRE(fs::exists(checkpoint));

    TrainerOptions again = options_in(rank == 0 ? dir + "/first" : dir + "/rank1-must-not-exist", true);
    again.restart = checkpoint;
    Trainer resumed(config(kSteps), again, comm);
    CHECK(resumed.step() == 3);
    const auto rest = resumed.run();
    CHECK(rest.steps == kSteps);
    INFO("relative weight difference between 1 + 2 ranks and the uninterrupted run");
    CHECK(relative_difference(resumed.flat_parameters(), ref.weights) < 1e-10);
    comm->barrier();
    if (rank == 1) CHECK_FALSE(fs::exists(dir + "/rank1-must-not-exist"));
    if (rank == 0) {
      // The learning curve of the restarted run continues the first run's file: step 6 is its last line.
      std::ifstream lcurve(dir + "/first/lcurve.out");
      std::string line, last;
      while (std::getline(lcurve, line)) last = line;
      CHECK(std::stoll(last) == kSteps);
    }
  }

  SECTION("2 ranks stopped by a signal on rank 1 after 1 step, then 1 rank to the end") {
    // The stop request reaches rank 1 only; the collective check stops both after the same step.
    if (rank == 1) deepkf::StopSignal::raise_for_test(15);
    Trainer stopped(config(kSteps),
                    options_in(rank == 0 ? dir + "/stopped" : dir + "/rank1-must-not-exist", true), comm);
    const auto part = stopped.run();
    deepkf::StopSignal::reset();
    REQUIRE(part.interrupted);
    REQUIRE(part.steps == 1);
    const std::string checkpoint = from_root(*comm, part.checkpoint);
    REQUIRE(fs::exists(checkpoint));
    CHECK_FALSE(fs::exists(dir + "/rank1-must-not-exist"));

    // Each rank resumes the 2-rank checkpoint alone (the covariance blocks of both ranks are in it).
    TrainerOptions again = options_in(dir + "/resumed-alone-rank" + std::to_string(rank), true);
    again.restart = checkpoint;
    Trainer resumed(config(kSteps), again, deepkf::make_serial_communicator());
    CHECK(resumed.step() == 1);
    const auto rest = resumed.run();
    CHECK(rest.steps == kSteps);
    INFO("relative weight difference between 2 + 1 ranks and the uninterrupted run");
    CHECK(relative_difference(resumed.flat_parameters(), ref.weights) < 1e-10);
  }
}

TEST_CASE("a failure on one rank only ends the set-up on both ranks with its message",
          "[train][mpi][errors]") {
  auto comm = world();
  REQUIRE(comm->size() == 2);
  const int rank = comm->rank();
  INFO("rank " << rank);
  const std::string dir = shared_temp_dir(*comm, "trainer-mpi-errors");

  SECTION("a data set that rank 1 cannot read") {
    auto systems = train_systems();
    if (rank == 1) systems.push_back(dir + "/missing_system");
    const std::string message =
        construction_error(config_of(input_doc(systems, 2)), options_in(dir + "/out", true), comm);
    INFO("error: " << message);
    CHECK(message.find("missing_system") != std::string::npos);
    if (rank == 0) CHECK(message.find("rank 1 failed") != std::string::npos);
  }

  SECTION("an output directory that rank 0 cannot create") {
    // A regular file in the way of the output directory, seen by rank 0 only (only it writes files).
    if (rank == 0) std::ofstream(dir + "/blocker") << "not a directory\n";
    comm->barrier();
    const std::string message = construction_error(config(2), options_in(dir + "/blocker/out", true), comm);
    INFO("error: " << message);
    CHECK_FALSE(message.empty());
    if (rank == 1) CHECK(message.find("rank 0 failed") != std::string::npos);
  }

  SECTION("ranks that read different training data") {
    auto systems = train_systems();
    if (rank == 1) systems.pop_back();
    const std::string message =
        construction_error(config_of(input_doc(systems, 2)), options_in(dir + "/out", true), comm);
    INFO("error: " << message);
    CHECK(message.find("ranks read different training data") != std::string::npos);
  }
}
