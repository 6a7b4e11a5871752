// change_bias_after_training: the energy bias after the last step, against the least-squares shift computed
// here from the trained model's own energies (one type, frames of different sizes; two types in a fixed
// ratio, where the minimum-norm shift is along the atom counts); with validation frames, the shift is kept
// only when it does not raise their error (labels made from the trained model's energies, so that the
// validation error before and after the shift is known exactly).
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/model/Batch.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

using deepkf::Trainer;
using deepkf::test::config_of;
using deepkf::test::options_in;
using json = nlohmann::json;

namespace {

json small_input(const json& type_map, const std::vector<std::string>& train, std::int64_t steps) {
  json doc = json::parse(R"({
    "model": {
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [8, 16],
                     "axis_neuron": 4, "seed": 3},
      "fitting_net": {"neuron": [16, 16], "resnet_dt": true, "seed": 3}
    },
    "optimizer": {"type": "LKF", "kf_blocksize": 512, "nselect": 6, "groupsize": 6},
    "training": {"training_data": {"batch_size": 1}, "seed": 5, "disp_freq": 1000000,
                 "save_freq": 1000000, "num_threads": 2}
  })");
  doc["model"]["type_map"] = type_map;
  doc["training"]["training_data"]["systems"] = train;
  doc["training"]["numb_steps"] = steps;
  return doc;
}

struct Trained {
  std::vector<double> weights, bias;
  deepkf::LoadedModel model;
};

Trained train(json doc, bool change_bias, const std::string& valid = "") {
  doc["training"]["change_bias_after_training"] = change_bias;
  if (!valid.empty()) doc["training"]["validation_data"] = {{"systems", {valid}}, {"batch_size", 1}};
  auto comm = deepkf::make_serial_communicator();
  Trainer trainer(config_of(doc), options_in(deepkf::test::make_temp_dir("bias-refit"), true), comm);
  const auto result = trainer.run();
  Trained t{trainer.flat_parameters(), {}, deepkf::load_model(result.model)};
  const auto b = t.model.model->energy_bias().to(torch::kFloat64).contiguous();
  t.bias.assign(b.data_ptr<double>(), b.data_ptr<double>() + b.numel());
  return t;
}

// Per frame of `systems`: (E_ref - E_model) / N and the fraction of the atoms of each type.
struct Residuals {
  std::vector<double> per_atom;
  std::vector<std::vector<double>> fractions;
};

Residuals residuals(const deepkf::LoadedModel& m, const std::vector<std::string>& systems) {
  torch::NoGradGuard guard;
  deepkf::DeepPot model = m.model;  // a handle: evaluate() is not const
  Residuals out;
  for (const auto& dir : systems) {
    const auto source = deepkf::open_npy_system(dir);
    const auto frames = source->read_all();
    for (std::int64_t f = 0; f < frames.nframes; ++f) {
      const auto b = deepkf::make_batch(frames, {f}, m.config, torch::kCPU, torch::kFloat64);
      const auto e = model->evaluate(b.coord, b.atype, b.nlist, b.shift).energy.item<double>();
      const double n = static_cast<double>(frames.natoms);
      out.per_atom.push_back((frames.energy[static_cast<std::size_t>(f)] - e) / n);
      std::vector<double> fraction(static_cast<std::size_t>(m.config.ntypes()), 0.0);
      for (const int t : frames.atom_types) fraction[static_cast<std::size_t>(t)] += 1.0 / n;
      out.fractions.push_back(fraction);
    }
  }
  return out;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Silicon frames of 12, 16 and 24 atoms.
std::vector<std::string> silicon_systems(const std::string& si_mlearn) {
  return {si_mlearn + "/train/sys_Si12", si_mlearn + "/train/sys_Si16", si_mlearn + "/train/sys_Si24"};
}

}  // namespace

TEST_CASE("change_bias_after_training shifts one type's bias by the mean per-atom energy error",
          "[train][bias]") {
  // Silicon frames of 12, 16 and 24 atoms: with one type the per-atom least squares gives every frame the
  // same weight, d = mean_k (E_ref,k - E_k) / N_k (a fit of total energies would weigh the large frames
  // more).
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  const std::vector<std::string> systems = silicon_systems(si);
  const json doc = small_input(json::array({"Si"}), systems, 6);
  const Trained kept = train(doc, false);
  const Trained changed = train(doc, true);
  INFO("the shift touches the energy bias only; the weights are those of the same run without it");
  CHECK(changed.weights == kept.weights);

  const Residuals before = residuals(kept.model, systems);
  const double d = mean(before.per_atom);
  INFO("mean per-atom energy error of the trained model before the shift: " << d << " eV/atom");
  REQUIRE(std::abs(d) > 1e-4);  // a shift too small to see would test nothing
  CHECK(changed.bias[0] - kept.bias[0] == Approx(d).epsilon(1e-9));
  const Residuals after = residuals(changed.model, systems);
  CHECK(std::abs(mean(after.per_atom)) < 1e-9);
}

TEST_CASE("with two types in a fixed ratio the bias shift is the minimum-norm one, along the atom counts",
          "[train][bias]") {
  // Water frames hold O and H in the ratio 1:2, so only x_O d_O + x_H d_H (x: the fractions 1/3, 2/3) is
  // determined by the data; the minimum-norm d is parallel to (x_O, x_H), d = c (x_O, x_H) with
  // c (x_O^2 + x_H^2) = mean per-atom error.
  const std::string water = deepkf::test::require_shared_dataset("water");
  const std::string dir = deepkf::test::make_temp_dir("water-frames") + "/sys";
  deepkf::write_npy_system(dir, deepkf::open_npy_system(water + "/data_0")->read({0, 1, 2}));
  const json doc = small_input(json::array({"O", "H"}), {dir}, 2);
  const Trained kept = train(doc, false);
  const Trained changed = train(doc, true);
  CHECK(changed.weights == kept.weights);

  const Residuals before = residuals(kept.model, {dir});
  const double x_o = before.fractions[0][0], x_h = before.fractions[0][1];
  REQUIRE(x_o == Approx(1.0 / 3.0));
  const double c = mean(before.per_atom) / (x_o * x_o + x_h * x_h);
  INFO("mean per-atom energy error before the shift: " << mean(before.per_atom) << " eV/atom");
  CHECK(changed.bias[0] - kept.bias[0] == Approx(c * x_o).epsilon(1e-9));
  CHECK(changed.bias[1] - kept.bias[1] == Approx(c * x_h).epsilon(1e-9));
  CHECK(std::abs(mean(residuals(changed.model, {dir}).per_atom)) < 1e-9);
}

TEST_CASE("the bias shift is applied only when it does not raise the validation energy error",
          "[train][bias]") {
  // Validation frames whose labels are the trained model's own energies (error 0 before any shift), or
  // those energies minus the shift the training frames call for (error |d| before, 0 after). Training does
  // not depend on the validation set, so both runs end at the weights of the run without it.
  const std::string si = deepkf::test::require_shared_dataset("si_mlearn");
  const std::vector<std::string> systems = silicon_systems(si);
  const json doc = small_input(json::array({"Si"}), systems, 6);
  const Trained kept = train(doc, false);
  const double d = mean(residuals(kept.model, systems).per_atom);
  REQUIRE(std::abs(d) > 1e-4);

  auto frames = deepkf::open_npy_system(si + "/train/sys_Si24")->read_all();
  const auto own = residuals(kept.model, {si + "/train/sys_Si24"});
  const auto write_valid = [&](const std::string& tag, double offset_per_atom) {
    auto labelled = frames;
    for (std::size_t f = 0; f < labelled.energy.size(); ++f) {
      const double model_energy = labelled.energy[f] - own.per_atom[f] * static_cast<double>(labelled.natoms);
      labelled.energy[f] = model_energy + offset_per_atom * static_cast<double>(labelled.natoms);
    }
    const std::string dir = deepkf::test::make_temp_dir(tag) + "/sys";
    deepkf::write_npy_system(dir, labelled);
    return dir;
  };

  SECTION("a shift that raises the validation error is not applied") {
    const Trained t = train(doc, true, write_valid("bias-valid-exact", 0.0));
    REQUIRE(t.weights == kept.weights);
    INFO("the validation labels are the model's energies: any shift raises their error, the bias stays");
    CHECK(t.bias == kept.bias);
  }
  SECTION("a shift that lowers the validation error is applied") {
    const Trained t = train(doc, true, write_valid("bias-valid-offset", d));
    REQUIRE(t.weights == kept.weights);
    INFO("the validation labels are off by the training frames' mean error d = " << d << " eV/atom");
    CHECK(t.bias[0] - kept.bias[0] == Approx(d).epsilon(1e-9));
  }
}
