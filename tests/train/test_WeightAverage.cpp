// The moving average of the weights (enable_ema) against its closed form, its archive round trip, and the
// swap that writes model_ema.pt.
#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "src/model/DeepPot.hpp"
#include "src/train/WeightAverage.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/SmallModel.hpp"

namespace {

using deepkf::DeepPot;
using deepkf::WeightAverage;

// Sets every weight of the model to its initial value times `scale` plus `shift`.
void set_weights(DeepPot& model, const std::vector<torch::Tensor>& initial, double scale, double shift) {
  torch::NoGradGuard no_grad;
  auto w = model->parameters();
  for (std::size_t i = 0; i < w.size(); ++i) w[i].copy_(initial[i] * scale + shift);
}

std::vector<torch::Tensor> copies(const DeepPot& model) {
  std::vector<torch::Tensor> out;
  for (const auto& w : model->parameters()) out.push_back(w.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("the average of the weights is d^k w_0 + (1 - d) sum_j d^(k-j) w_j", "[train][ema]") {
  DeepPot model(deepkf::test::small_silicon_config(8));
  const auto w0 = copies(model);
  const double d = 0.7;
  WeightAverage average(model, d);
  // Weights after step j: w0 * (1 + j) + 0.01 j; three steps.
  std::vector<double> scale = {1.0}, shift = {0.0};
  for (int j = 1; j <= 3; ++j) {
    set_weights(model, w0, 1.0 + j, 0.01 * j);
    average.update(model);
    scale.push_back(1.0 + j);
    shift.push_back(0.01 * j);
  }
  // a_3 = d^3 w_0 + (1 - d)(d^2 w_1 + d w_2 + w_3), each w_j = s_j w0 + t_j.
  double s = std::pow(d, 3) * scale[0], t = std::pow(d, 3) * shift[0];
  for (int j = 1; j <= 3; ++j) {
    s += (1 - d) * std::pow(d, 3 - j) * scale[static_cast<std::size_t>(j)];
    t += (1 - d) * std::pow(d, 3 - j) * shift[static_cast<std::size_t>(j)];
  }
  const auto live = copies(model);
  average.with_average(model, [&] {
    const auto w = model->parameters();
    for (std::size_t i = 0; i < w.size(); ++i) {
      INFO("parameter tensor " << i);
      CHECK(torch::allclose(w[i], w0[i] * s + t, 1e-13, 1e-15));
    }
  });
  // The live weights are back, bit for bit, also when the work inside throws.
  const auto w = model->parameters();
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(torch::equal(w[i], live[i]));
  CHECK_THROWS_AS(average.with_average(model, [] { throw std::runtime_error("inside"); }),
                  std::runtime_error);
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(torch::equal(model->parameters()[i], live[i]));
}

TEST_CASE("the average of the weights survives an archive and refuses another model", "[train][ema]") {
  DeepPot model(deepkf::test::small_silicon_config(8));
  WeightAverage average(model, 0.9);
  const auto w0 = copies(model);
  set_weights(model, w0, 2.0, 0.5);
  average.update(model);
  torch::serialize::OutputArchive out;
  average.save(out);
  std::stringstream bytes;
  out.save_to(bytes);

  DeepPot other(deepkf::test::small_silicon_config(8));
  WeightAverage restored(other, 0.9);
  torch::serialize::InputArchive in;
  in.load_from(bytes);
  REQUIRE(restored.load(in, "test.ckpt"));
  std::vector<torch::Tensor> a, b;
  average.with_average(model, [&] { a = copies(model); });
  restored.with_average(other, [&] { b = copies(other); });
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(torch::equal(a[i], b[i]));

  torch::serialize::OutputArchive empty;
  std::stringstream none;
  empty.write("something", torch::zeros({1}));
  empty.save_to(none);
  torch::serialize::InputArchive without;
  without.load_from(none);
  CHECK_FALSE(restored.load(without, "old.ckpt"));

  auto wider = deepkf::test::small_silicon_config(8);
  wider.fitting_neuron = {12, 12};
  DeepPot bigger(wider);
  WeightAverage mismatch(bigger, 0.9);
  torch::serialize::InputArchive again;
  std::stringstream copy(bytes.str());
  again.load_from(copy);
  CHECK_THROWS_WITH(mismatch.load(again, "test.ckpt"), Catch::Contains("does not fit the model"));
}
