// Measurements, schedules, atom selection, the Adam baseline and the optimizer factory.
#include <torch/torch.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "optim/AdamTrainer.hpp"
#include "optim/AtomSelector.hpp"
#include "optim/KalmanFilter.hpp"
#include "optim/KalmanMeasurement.hpp"
#include "src/core/Error.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

torch::Tensor leaf(std::vector<double> v) { return torch::tensor(v, torch::kFloat64).requires_grad_(true); }

}  // namespace

TEST_CASE("energy measurement against hand-computed values", "[optim][measurement]") {
  // E = (1, 3), E_ref = (1.5, 1), N = (2, 4), p_e = 2:
  // d = 2 (0.5) / 2 = 0.5 and 2 (-2) / 4 = -1; s = (1, -1); y = 2*1/2 - 2*3/4 = -0.5; dy/dE = (1, -0.5).
  auto energy = leaf({1.0, 3.0});
  const auto m = energy_measurement(energy, torch::tensor({1.5, 1.0}, torch::kFloat64),
                                    torch::tensor({2, 4}, torch::kInt64), 2.0);
  CHECK(m.abs_sum == Approx(1.5).epsilon(1e-15));
  CHECK(m.count == 2);
  CHECK(m.frames == 2);
  CHECK(m.y.item<double>() == Approx(-0.5).epsilon(1e-15));
  m.y.backward();
  CHECK(energy.grad()[0].item<double>() == Approx(1.0));
  CHECK(energy.grad()[1].item<double>() == Approx(-0.5));
  // e = sqrt(B) mean |d| = sqrt(2) * 0.75
  CHECK(kalman_error(m.abs_sum, m.count, m.frames) == Approx(std::sqrt(2.0) * 0.75).epsilon(1e-15));
  CHECK_THROWS_AS(kalman_error(0.0, 0, 0), OptimError);
  CHECK_THROWS_AS(
      energy_measurement(energy, torch::tensor({1.0}, torch::kFloat64), torch::tensor({2, 4}), 1.0),
      OptimError);
}

TEST_CASE("force measurement against hand-computed values", "[optim][measurement]") {
  // One frame, N = 4, a group of 2 atoms, p_f = 2: d = 2 (F_ref - F) / 4 per component.
  auto force = leaf({1, 0, -1, 2, 2, 3});
  const auto f = force.view({1, 2, 3});
  const auto ref = torch::tensor({2.0, 0.0, -3.0, 1.0, 2.0, 4.0}, torch::kFloat64).view({1, 2, 3});
  const auto m = force_measurement(f, ref, torch::tensor({4.0}, torch::kFloat64), 2.0);
  // d = (0.5, 0, -1, -0.5, 0, 0.5): sum |d| = 2.5 over 6 components
  CHECK(m.abs_sum == Approx(2.5).epsilon(1e-15));
  CHECK(m.count == 6);
  CHECK(m.frames == 1);
  // y = sum_c s_c p_f F_c / (N * g * 3) = 2/4 * (1 + 0 + 1 - 2 + 0 + 3) / 6 = 0.25
  CHECK(m.y.item<double>() == Approx(0.25).epsilon(1e-15));
  m.y.backward();
  // dy/dF_c = s_c p_f / (N g 3) = s_c / 12 (s = 0 where d = 0)
  const std::vector<double> expect = {1.0 / 12, 0.0, -1.0 / 12, -1.0 / 12, 0.0, 1.0 / 12};
  for (int c = 0; c < 6; ++c)
    CHECK(force.grad()[c].item<double>() == Approx(expect[static_cast<std::size_t>(c)]));
  CHECK(kalman_error(m.abs_sum, m.count, m.frames) == Approx(2.5 / 6));
  CHECK_THROWS_AS(force_measurement(f.view({1, 3, 2}), ref.view({1, 3, 2}), torch::tensor({4.0}), 1.0),
                  OptimError);
}

TEST_CASE("virial measurement against hand-computed values", "[optim][measurement]") {
  // One frame, N = 2, p_v = 1: W = 1..9, W_ref = W + (1, -1, 0, ...): d = (0.5, -0.5, 0, ...);
  // y = (1 * 1/2 - 1 * 2/2) / 9 = -1/18.
  auto virial = torch::arange(1.0, 10.0, torch::kFloat64).view({1, 9}).requires_grad_(true);
  auto ref = virial.detach().clone();
  ref[0][0] += 1.0;
  ref[0][1] -= 1.0;
  const auto m = virial_measurement(virial.view({1, 3, 3}), ref.view({1, 3, 3}), torch::tensor({2}), 1.0);
  CHECK(m.abs_sum == Approx(1.0).epsilon(1e-15));
  CHECK(m.count == 9);
  CHECK(m.y.item<double>() == Approx(-1.0 / 18).epsilon(1e-15));
}

TEST_CASE("kalman prefactor schedule follows p_start (p_limit / p_start)^(t/T)", "[optim][schedule]") {
  CHECK(kalman_prefactor(1.0, 4.0, 0.0) == 1.0);
  CHECK(kalman_prefactor(1.0, 4.0, 0.5) == Approx(2.0).epsilon(1e-15));  // geometric mean
  CHECK(kalman_prefactor(1.0, 4.0, 1.0) == Approx(4.0).epsilon(1e-15));
  CHECK(kalman_prefactor(2.0, 0.02, 0.25) == Approx(2.0 * std::pow(0.01, 0.25)).epsilon(1e-15));
  CHECK(kalman_prefactor(3.0, 3.0, 0.7) == 3.0);
  CHECK(kalman_prefactor(0.0, 0.0, 0.3) == 0.0);
  CHECK_THROWS_AS(kalman_prefactor(0.0, 1.0, 0.3), ConfigError);
}

TEST_CASE("adam learning rate and loss prefactor schedules", "[optim][schedule][adam]") {
  auto params = make_params({{3}}, 1);
  AdamOptions o;
  o.start_lr = 1e-3;
  o.stop_lr = 1e-5;
  o.decay_steps = 10;
  o.total_steps = 100;
  AdamTrainer adam(params, o);
  // r = (1e-5 / 1e-3)^(10 / 100) = 10^-0.2; lr(t) = 1e-3 * r^floor(t / 10)
  CHECK(adam.learning_rate(0) == 1e-3);
  CHECK(adam.learning_rate(9) == 1e-3);
  CHECK(adam.learning_rate(10) == Approx(1e-3 * std::pow(10.0, -0.2)).epsilon(1e-14));
  CHECK(adam.learning_rate(55) == Approx(1e-4).epsilon(1e-14));
  CHECK(adam.learning_rate(59) == Approx(1e-4).epsilon(1e-14));
  CHECK(adam.learning_rate(100) == Approx(1e-5).epsilon(1e-14));
  // p(t) = p_limit + (p_start - p_limit) lr(t) / lr_0
  const auto p0 = adam.prefactors(0, 0.02, 1.0, 1000.0, 1.0, 0.0, 0.0);
  CHECK(p0.energy == Approx(0.02));
  CHECK(p0.force == Approx(1000.0));
  CHECK(p0.virial == 0.0);
  const auto p55 = adam.prefactors(55, 0.02, 1.0, 1000.0, 1.0, 0.5, 2.0);
  CHECK(p55.energy == Approx(1.0 + (0.02 - 1.0) * 0.1));
  CHECK(p55.force == Approx(1.0 + 999.0 * 0.1));
  CHECK(p55.virial == Approx(2.0 - 1.5 * 0.1));
  const auto p100 = adam.prefactors(100, 0.02, 1.0, 1000.0, 1.0, 0.0, 0.0);
  CHECK(p100.force == Approx(1.0 + 999.0 * 0.01));
  o.decay_steps = 0;
  CHECK_THROWS_AS(AdamTrainer(params, o), ConfigError);
}

TEST_CASE("ener loss against hand-computed values", "[optim][adam]") {
  // B = 2, N = 2: dE = (1, -2); dF all 0.5 over 12 components; dW = 3 in one of 18 components.
  const auto e = torch::tensor({1.0, 0.0}, torch::kFloat64);
  const auto e_ref = torch::tensor({0.0, 2.0}, torch::kFloat64);
  const auto f = torch::zeros({2, 2, 3}, torch::kFloat64);
  const auto f_ref = torch::full({2, 2, 3}, 0.5, torch::kFloat64);
  const auto v = torch::zeros({2, 9}, torch::kFloat64);
  auto v_ref = torch::zeros({2, 9}, torch::kFloat64);
  v_ref[1][4] = 3.0;
  // L = p_e/N <dE^2> + p_f <dF^2> + p_v/N <dW^2> = 0.1/2 * 2.5 + 10 * 0.25 + 4/2 * 0.5
  const double expect = 0.1 / 2 * 2.5 + 10 * 0.25 + 4.0 / 2 * 0.5;
  CHECK(ener_loss(e, e_ref, f, f_ref, v, v_ref, 2, 0.1, 10.0, 4.0).item<double>() ==
        Approx(expect).epsilon(1e-15));
  // Undefined force / virial and zero prefactors leave terms out.
  CHECK(ener_loss(e, e_ref, torch::Tensor(), f_ref, v, v_ref, 2, 0.1, 10.0, 0.0).item<double>() ==
        Approx(0.1 / 2 * 2.5).epsilon(1e-15));
  CHECK_THROWS_AS(ener_loss(e, e_ref, f, f_ref.narrow(1, 0, 1), v, v_ref, 2, 0.1, 10.0, 0.0), OptimError);
}

TEST_CASE("atom selector is seeded, in range, uniform and restartable", "[optim][selector]") {
  AtomSelector a(42, 24, 6);
  AtomSelector b(42, 24, 6);
  AtomSelector c(43, 24, 6);
  const auto ga = a.select(3, 10);
  const auto gb = b.select(3, 10);
  const auto gc = c.select(3, 10);
  REQUIRE(ga.size() == 4);
  bool differs = false;
  for (std::size_t g = 0; g < ga.size(); ++g) {
    CHECK(ga[g].sizes() == torch::IntArrayRef({3, 6}));
    CHECK(ga[g].scalar_type() == torch::kInt64);
    CHECK(torch::equal(ga[g], gb[g]));
    differs = differs || !torch::equal(ga[g], gc[g]);
    CHECK(ga[g].min().item<std::int64_t>() >= 0);
    CHECK(ga[g].max().item<std::int64_t>() < 10);
  }
  CHECK(differs);

  SECTION("a remainder group when groupsize does not divide nselect") {
    AtomSelector r(1, 10, 4);
    const auto g = r.select(2, 5);
    REQUIRE(g.size() == 3);
    CHECK(g[2].sizes() == torch::IntArrayRef({2, 2}));
  }
  SECTION("uniform over atoms (chi-square)") {
    AtomSelector u(7, 24, 6);
    const std::int64_t natoms = 5;
    std::vector<double> counts(natoms, 0.0);
    double total = 0;
    for (int rep = 0; rep < 500; ++rep) {
      for (const auto& g : u.select(2, natoms)) {
        const auto flat = g.reshape({-1});
        for (std::int64_t i = 0; i < flat.size(0); ++i)
          counts[static_cast<std::size_t>(flat[i].item<std::int64_t>())] += 1;
        total += static_cast<double>(flat.size(0));
      }
    }
    double chi2 = 0;
    for (const double x : counts) chi2 += (x - total / natoms) * (x - total / natoms) / (total / natoms);
    CHECK(chi2 < 25.0);  // 4 degrees of freedom: P(chi2 > 25) < 1e-4
  }
  SECTION("the data-parallel overload returns the matching rows of the whole batch") {
    AtomSelector whole(9, 12, 6);
    AtomSelector part(9, 12, 6);
    const auto all = whole.select(4, 20);
    const auto mine = part.select(1, 2, 4, 20);
    for (std::size_t g = 0; g < all.size(); ++g) CHECK(torch::equal(mine[g], all[g].narrow(0, 1, 2)));
  }
  SECTION("save and restore") {
    const std::string file = make_temp_dir("selector") + "/state.pt";
    AtomSelector s(5, 24, 6);
    s.select(2, 8);
    torch::serialize::OutputArchive out;
    s.save(out);
    out.save_to(file);
    const auto next = s.select(2, 8);
    AtomSelector restored(999, 24, 6);
    torch::serialize::InputArchive in;
    in.load_from(file);
    restored.load(in);
    const auto again = restored.select(2, 8);
    for (std::size_t g = 0; g < next.size(); ++g) CHECK(torch::equal(next[g], again[g]));
  }
  CHECK_THROWS_AS(AtomSelector(1, 0, 6), ConfigError);
  CHECK_THROWS_AS(a.select(2, 0), OptimError);
}

TEST_CASE("adam save and restore continues bit-identically", "[optim][adam][restart]") {
  const std::vector<std::vector<std::int64_t>> shapes = {{4, 3}, {3}};
  AdamOptions o;
  o.start_lr = 1e-2;
  o.stop_lr = 1e-4;
  o.decay_steps = 2;
  o.total_steps = 10;
  // Loss of step k: sum of (w - target_k)^2 weighted, fixed per k.
  auto run = [&](std::vector<torch::Tensor>& params, AdamTrainer& adam, std::int64_t from, std::int64_t to) {
    for (std::int64_t k = from; k < to; ++k) {
      adam.zero_grad();
      const auto targets = make_grads(params, k);
      auto loss = torch::zeros({}, torch::kFloat64);
      for (std::size_t t = 0; t < params.size(); ++t) loss = loss + (params[t] - targets[t]).square().sum();
      loss.backward();
      adam.step(k);
    }
  };
  auto straight = make_params(shapes, 2);
  for (auto& p : straight) p.requires_grad_(true);
  AdamTrainer adam_straight(straight, o);
  run(straight, adam_straight, 0, 7);

  auto first = make_params(shapes, 2);
  for (auto& p : first) p.requires_grad_(true);
  AdamTrainer adam_first(first, o);
  run(first, adam_first, 0, 3);
  const std::string file = make_temp_dir("adam") + "/state.pt";
  torch::serialize::OutputArchive out;
  adam_first.save(out);
  out.save_to(file);
  CHECK(adam_first.state_bytes() == 2 * 15 * 8);  // exp_avg and exp_avg_sq of 15 float64 values

  auto resumed = clone_all(first);
  for (auto& p : resumed) p.requires_grad_(true);
  AdamTrainer adam_resumed(resumed, o);
  torch::serialize::InputArchive in;
  in.load_from(file);
  adam_resumed.load(in);
  run(resumed, adam_resumed, 3, 7);
  for (std::size_t t = 0; t < shapes.size(); ++t) CHECK(torch::equal(resumed[t], straight[t]));
  // Without the state the continuation differs (the moments matter), so the check above can fail.
  auto fresh = clone_all(first);
  for (auto& p : fresh) p.requires_grad_(true);
  AdamTrainer adam_fresh(fresh, o);
  run(fresh, adam_fresh, 3, 7);
  CHECK_FALSE(torch::equal(fresh[0], straight[0]));
  CHECK(adam_resumed.status() == adam_straight.status());
}

TEST_CASE("adam's betas and weight decay follow Adam's update written out by hand", "[optim][adam]") {
  AdamOptions o;
  o.start_lr = 0.05;
  o.stop_lr = 0.05;
  o.decay_steps = 100;
  o.total_steps = 100;
  o.beta1 = 0.5;
  o.beta2 = 0.8;
  o.weight_decay = 0.3;
  // Loss 0.5 a w^2 per element, so the gradient is a w; three steps.
  const auto a = torch::tensor({1.0, -2.0, 0.5}, torch::kFloat64);
  auto w = torch::tensor({0.7, 0.2, -1.1}, torch::kFloat64).requires_grad_(true);
  AdamTrainer adam({w}, o);
  std::vector<double> ref = {0.7, 0.2, -1.1}, m(3, 0.0), v(3, 0.0);
  for (int t = 1; t <= 3; ++t) {
    adam.zero_grad();
    (0.5 * a * w.square()).sum().backward();
    adam.step(t - 1);
    for (int i = 0; i < 3; ++i) {
      // g = dL/dw + lambda w; m, v the moments; bias-corrected step lr m^ / (sqrt(v^) + eps).
      const double g = a[i].item<double>() * ref[i] + o.weight_decay * ref[i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      const double mhat = m[i] / (1 - std::pow(o.beta1, t));
      const double vhat = v[i] / (1 - std::pow(o.beta2, t));
      ref[i] -= o.start_lr * mhat / (std::sqrt(vhat) + o.eps);
    }
    INFO("step " << t);
    for (int i = 0; i < 3; ++i) CHECK(w[i].item<double>() == Approx(ref[i]).epsilon(1e-12));
  }
  // The defaults (0.9, 0.999, no decay) give other weights after the same three steps.
  auto w0 = torch::tensor({0.7, 0.2, -1.1}, torch::kFloat64).requires_grad_(true);
  AdamOptions d = o;
  d.beta1 = 0.9;
  d.beta2 = 0.999;
  d.weight_decay = 0.0;
  AdamTrainer adam0({w0}, d);
  for (int t = 0; t < 3; ++t) {
    adam0.zero_grad();
    (0.5 * a * w0.square()).sum().backward();
    adam0.step(t);
  }
  CHECK_FALSE(torch::allclose(w0, w));
}

TEST_CASE("both optimizers report name, status and state", "[optim]") {
  auto params = make_params({{5}, {2, 2}}, 1);
  KalmanOptions k;
  k.blocksize = 4;
  AdamOptions a;
  a.total_steps = 100;
  const KalmanFilter lkf(params, k);
  CHECK(lkf.name() == "RLEKF");
  CHECK(lkf.status().rfind("lambda 0.98", 0) == 0);
  CHECK(lkf.state_bytes() == (10 + 1 + 10) * 8);  // packed triangles of blocks 4, 1, 4
  const AdamTrainer adam(params, a);
  CHECK(adam.name() == "Adam");
  CHECK(adam.status() == "lr 1.000e-03");
  CHECK(adam.state_bytes() == 0);  // the moments are made by the first step
}
