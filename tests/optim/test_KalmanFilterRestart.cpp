// RLEKF's save and restore: a resumed run repeats the uninterrupted one bit for bit (float64 and float32
// covariance), a dense format 1 state restores, and states of another layout or no state are refused.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using deepkf::KalmanFilter;
using deepkf::KalmanOptions;
using namespace deepkf::test;

namespace {

void save_state(KalmanFilter& kf, const std::string& file) {
  torch::serialize::OutputArchive archive;
  kf.save(archive);
  archive.save_to(file);
}

void load_state(KalmanFilter& kf, const std::string& file) {
  torch::serialize::InputArchive archive;
  archive.load_from(file);
  kf.load(archive);
}

}  // namespace

TEST_CASE("with a float32 covariance a resumed run repeats the run that saved the state, bit for bit",
          "[optim][kalman][restart]") {
  // Saving flushes the pending update in the running filter, which then multiplies with stored values as
  // the resumed one does (a float32 sweep's products otherwise see values before their rounding).
  const std::vector<std::vector<std::int64_t>> shapes = {{6, 5}, {5}, {12}, {3, 3}};
  KalmanOptions options;
  options.blocksize = 16;
  options.p_dtype = torch::kFloat32;
  const std::string file = make_temp_dir("kalman-restart-f32") + "/state.pt";
  auto original = make_params(shapes, 21);
  KalmanFilter kf(original, options);
  std::vector<torch::Tensor> saved_weights;
  for (std::int64_t k = 0; k < 8; ++k) {
    kf.update(make_innovation(k), make_grads(original, k));
    if (k == 2) {
      save_state(kf, file);
      saved_weights = clone_all(original);
    }
  }
  auto resumed = clone_all(saved_weights);
  KalmanFilter kf_resumed(resumed, options);
  load_state(kf_resumed, file);
  for (std::int64_t k = 3; k < 8; ++k) kf_resumed.update(make_innovation(k), make_grads(resumed, k));
  for (std::size_t t = 0; t < shapes.size(); ++t) CHECK(torch::equal(resumed[t], original[t]));
  for (std::int64_t i = 0; i < kf.layout().num_blocks(); ++i)
    CHECK(torch::equal(kf_resumed.packed_covariance(i), kf.packed_covariance(i)));
}

TEST_CASE("kalman save and restore continues bit-identically", "[optim][kalman][restart]") {
  const std::vector<std::vector<std::int64_t>> shapes = {{6, 5}, {5}, {12}, {3, 3}};
  KalmanOptions options;
  options.blocksize = 16;
  const std::string dir = make_temp_dir("kalman-restart");
  const std::string file = dir + "/state.pt";

  // Uninterrupted: 8 steps.
  auto straight = make_params(shapes, 21);
  KalmanFilter kf_straight(straight, options);
  for (std::int64_t k = 0; k < 8; ++k) kf_straight.update(make_innovation(k), make_grads(straight, k));

  // Interrupted after 3 steps: state to a file, weights copied as a checkpoint would hold them.
  auto first = make_params(shapes, 21);
  std::vector<torch::Tensor> saved_weights;
  {
    KalmanFilter kf(first, options);
    for (std::int64_t k = 0; k < 3; ++k) kf.update(make_innovation(k), make_grads(first, k));
    save_state(kf, file);
    saved_weights = clone_all(first);
  }
  auto resumed = clone_all(saved_weights);
  KalmanFilter kf_resumed(resumed, options);
  load_state(kf_resumed, file);
  CHECK(kf_resumed.steps() == 3);
  for (std::int64_t k = 3; k < 8; ++k) kf_resumed.update(make_innovation(k), make_grads(resumed, k));

  for (std::size_t t = 0; t < shapes.size(); ++t) CHECK(torch::equal(resumed[t], straight[t]));
  for (std::int64_t i = 0; i < kf_straight.layout().num_blocks(); ++i) {
    CHECK(torch::equal(kf_resumed.covariance(i), kf_straight.covariance(i)));
  }
  CHECK(kf_resumed.lambda() == kf_straight.lambda());
  CHECK(kf_resumed.steps() == 8);

  SECTION("a state with another block layout is refused") {
    KalmanOptions other = options;
    other.blocksize = 8;
    auto p = make_params(shapes, 21);
    KalmanFilter kf_other(p, other);
    torch::serialize::InputArchive again;
    again.load_from(file);
    CHECK_THROWS_AS(kf_other.load(again), deepkf::OptimError);
  }
  SECTION("a format 1 state (dense blocks) restores and continues like the packed one") {
    auto old_params = make_params(shapes, 21);
    KalmanFilter kf_old(old_params, options);
    for (std::int64_t k = 0; k < 3; ++k) kf_old.update(make_innovation(k), make_grads(old_params, k));
    torch::serialize::OutputArchive archive;
    save_format1_state(kf_old, archive);
    archive.save_to(dir + "/v1.pt");

    auto from_v1 = clone_all(saved_weights);
    KalmanFilter kf_v1(from_v1, options);
    torch::serialize::InputArchive in_v1;
    in_v1.load_from(dir + "/v1.pt");
    kf_v1.load(in_v1);
    for (std::int64_t k = 3; k < 8; ++k) kf_v1.update(make_innovation(k), make_grads(from_v1, k));
    for (std::size_t t = 0; t < shapes.size(); ++t) CHECK(torch::equal(from_v1[t], straight[t]));
  }
  SECTION("an archive without kalman state is refused") {
    torch::serialize::OutputArchive empty;
    empty.write("x", torch::zeros({1}));
    empty.save_to(dir + "/empty.pt");
    torch::serialize::InputArchive again;
    again.load_from(dir + "/empty.pt");
    CHECK_THROWS_AS(kf_resumed.load(again), deepkf::OptimError);
  }
}
