// Training on DeePMD-kit's type_mix data (set.*/real_atom_types.npy): the folder's frames are read as the
// ordinary systems they form (src/data/TypeMix.hpp) and trained as such.
#include <cmath>
#include <filesystem>
#include <vector>

#include "src/core/Communicator.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/NpyFile.hpp"
#include "src/train/Trainer.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"
#include "tests/train/TrainerTestSupport.hpp"

using json = nlohmann::json;

TEST_CASE("a type_mix water folder trains as the systems of its frames", "[train][type_mix]") {
  const std::string water = deepkf::test::require_shared_dataset("water/data_0");
  const std::string dir = deepkf::test::make_temp_dir("type-mix-train");
  // 6 frames of water in type_mix format: frames 0-3 as they are, in frames 4-5 the last two H virtual.
  deepkf::System s = deepkf::open_npy_system(water)->read({0, 1, 2, 3, 4, 5});
  std::vector<double> real_types;
  for (std::int64_t f = 0; f < 6; ++f)
    for (std::int64_t a = 0; a < s.natoms; ++a)
      real_types.push_back(f >= 4 && a >= s.natoms - 2 ? -1 : s.atom_types[static_cast<std::size_t>(a)]);
  s.atom_types.assign(static_cast<std::size_t>(s.natoms), 0);
  deepkf::write_npy_system(dir + "/mix", s);
  deepkf::write_npy(dir + "/mix/set.000/real_atom_types.npy", {6, s.natoms}, real_types.data(),
                    deepkf::NpyDtype::kInt64);

  json doc = json::parse(R"({
    "model": {
      "type_map": ["O", "H"],
      "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [8, 16],
                     "axis_neuron": 4, "type_one_side": true, "seed": 3},
      "fitting_net": {"neuron": [16, 16], "seed": 3}
    },
    "optimizer": {"type": "LKF", "kf_blocksize": 512, "p0": 100.0},
    "training": {"training_data": {"batch_size": 1}, "validation_fraction": 0.34, "numb_steps": 2,
                 "seed": 5, "disp_freq": 1000, "save_freq": 1000, "num_threads": 2,
                 "change_bias_after_training": false}
  })");
  doc["training"]["training_data"]["systems"] = {dir + "/mix"};
  deepkf::Trainer trainer(deepkf::test::config_of(doc), deepkf::test::options_in(dir + "/out"),
                          deepkf::make_serial_communicator());
  const auto result = trainer.run();
  CHECK(result.steps == 2);
  CHECK(std::isfinite(result.validation.rmse_e()));
  CHECK(std::isfinite(result.validation.rmse_f()));
  // Two systems (192 and 190 atoms), each split into training and validation frames.
  CHECK_THAT(
      deepkf::test::read_text(dir + "/out/train.log"),
      Catch::Matchers::Contains("training data: 2 systems, 4 frames; validation: 2 systems, 2 frames"));
  std::filesystem::remove_all(dir);
}
