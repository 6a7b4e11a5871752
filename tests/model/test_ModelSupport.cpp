// Parameter counts, frozen weights and batches of real data (ModelConfig itself: test_ModelConfig.cpp).
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "src/core/Error.hpp"
#include "src/model/Batch.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/Statistics.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

// A minimal .npy reader for the tests (little-endian float32/float64, C order): values as double.
std::vector<double> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  char magic[8];
  in.read(magic, 8);
  REQUIRE(std::string(magic + 1, 5) == "NUMPY");
  std::size_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::size_t>(b[3]) << 24);
  }
  std::string header(header_len, ' ');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  REQUIRE(header.find("'fortran_order': False") != std::string::npos);
  const bool f4 = header.find("<f4") != std::string::npos;
  REQUIRE((f4 || header.find("<f8") != std::string::npos));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<double> out;
  if (f4) {
    for (std::size_t k = 0; k + 4 <= bytes.size(); k += 4) {
      float v;
      std::memcpy(&v, bytes.data() + k, 4);
      out.push_back(v);
    }
  } else {
    for (std::size_t k = 0; k + 8 <= bytes.size(); k += 8) {
      double v;
      std::memcpy(&v, bytes.data() + k, 8);
      out.push_back(v);
    }
  }
  return out;
}

System read_water(const std::string& dir) {
  System s;
  s.source = dir;
  std::ifstream tm(dir + "/type_map.raw");
  for (std::string name; tm >> name;) s.type_map.push_back(name);
  std::ifstream ty(dir + "/type.raw");
  for (int t; ty >> t;) s.atom_types.push_back(t);
  s.natoms = static_cast<std::int64_t>(s.atom_types.size());
  s.coord = read_npy(dir + "/set.000/coord.npy");
  s.box = read_npy(dir + "/set.000/box.npy");
  s.energy = read_npy(dir + "/set.000/energy.npy");
  s.force = read_npy(dir + "/set.000/force.npy");
  s.nframes = static_cast<std::int64_t>(s.energy.size());
  REQUIRE(s.coord.size() == static_cast<std::size_t>(s.nframes * s.natoms * 3));
  return s;
}

}  // namespace

TEST_CASE("parameter counts of the water reference settings match a count by hand", "[model]") {
  // embedding net 1 -> 25 -> 50 -> 100, no resnet_dt:
  //   (1*25 + 25) + (25*50 + 50) + (50*100 + 100) = 50 + 1300 + 5100 = 6450
  // fitting net 1600 (= 100 * 16) -> 240 -> 240 -> 240 -> 1, resnet_dt on the two 240 -> 240 layers:
  //   (1600*240 + 240) + 2 * (240*240 + 240 + 240) + (240 + 1) = 384240 + 116160 + 241 = 500641
  // type_one_side true:  2 embedding nets + 2 fitting nets = 12900 + 1001282 = 1014182
  // type_one_side false: 4 embedding nets + 2 fitting nets = 25800 + 1001282 = 1027082
  auto mc = ModelConfig::from_json(water_reference_model());
  {
    DeepPot model(mc);
    CHECK(model->parameter_count() == 1014182);
    const auto per_net = model->parameter_counts();
    REQUIRE(per_net.size() == 4);
    CHECK(per_net[0] == std::pair<std::string, std::int64_t>{"embedding[O]", 6450});
    CHECK(per_net[1] == std::pair<std::string, std::int64_t>{"embedding[H]", 6450});
    CHECK(per_net[2] == std::pair<std::string, std::int64_t>{"fitting[O]", 500641});
    CHECK(per_net[3] == std::pair<std::string, std::int64_t>{"fitting[H]", 500641});
    // registration order: embedding nets, then fitting nets, each layer as w, b, dt
    const auto names = model->named_parameters().keys();
    CHECK(names.front() == "embedding_0.w0");
    CHECK(names[1] == "embedding_0.b0");
    CHECK(names.back() == "fitting_1.b3");
    CHECK(model->named_buffers().size() == 3);
  }
  mc.type_one_side = false;
  {
    DeepPot model(mc);
    CHECK(model->parameter_count() == 1027082);
    const auto per_net = model->parameter_counts();
    REQUIRE(per_net.size() == 6);
    CHECK(per_net[1].first == "embedding[O,H]");
    CHECK(per_net[2].first == "embedding[H,O]");
    const auto names = model->named_parameters().keys();
    CHECK(names.front() == "embedding_0_0.w0");
  }
}

TEST_CASE("trainable freezes the embedding nets or fitting layers, counted by hand", "[model][trainable]") {
  // The water reference settings (per net: embedding 6450, fitting 500641 = layers 384240, 2 x 58080 and
  // 241 for the output layer).
  nlohmann::json model = water_reference_model();
  model["descriptor"]["trainable"] = false;
  auto mc = ModelConfig::from_json(model);
  CHECK_FALSE(mc.descriptor_trainable);
  CHECK(mc.to_json()["descriptor"]["trainable"] == false);
  CHECK(ModelConfig::from_json(mc.to_json()).to_json() == mc.to_json());
  {
    DeepPot m(mc);
    CHECK(m->parameter_count() == 1014182);
    CHECK(m->trainable_count() == 2 * 500641);
    CHECK(m->trained_text() == "1001282 parameters trained (12900 frozen)");
    for (const auto& p : m->named_parameters())
      CHECK(p.value().requires_grad() == (p.key().rfind("fitting_", 0) == 0));
    // The first trainable tensor is the first fitting layer's weight.
    CHECK(m->trainable_parameters().front().sizes() == torch::IntArrayRef({1600, 240}));
    // Freed again (as --init-model does with the input's choice).
    m->set_trainable(true, {});
    CHECK(m->trainable_count() == 1014182);
    CHECK(m->config().descriptor_trainable);
  }
  // Per fitting layer: the first hidden layer and the output layer frozen.
  model = water_reference_model();
  model["fitting_net"]["trainable"] = {false, true, true, false};
  mc = ModelConfig::from_json(model);
  {
    DeepPot m(mc);
    CHECK(m->trainable_count() == 2 * 6450 + 2 * 2 * 58080);
    CHECK_FALSE(m->named_parameters()["fitting_0.w0"].requires_grad());
    CHECK(m->named_parameters()["fitting_1.dt1"].requires_grad());
    CHECK_FALSE(m->named_parameters()["fitting_1.b3"].requires_grad());
  }
  // All true is the default, written nowhere.
  model["fitting_net"]["trainable"] = {true, true, true, true};
  CHECK(ModelConfig::from_json(model).to_json()["fitting_net"].count("trainable") == 0);
  model["fitting_net"]["trainable"] = true;
  CHECK(ModelConfig::from_json(model).fitting_trainable.empty());
  // A list of the wrong length, a non-boolean, and nothing left to train.
  model["fitting_net"]["trainable"] = {true, false};
  CHECK_THROWS_WITH(
      ModelConfig::from_json(model, "in.json"),
      "in.json: model key 'model.fitting_net.trainable' must be true, false or a list of 4 of them "
      "(one per layer of fitting_net.neuron, then the output layer), got [true,false]");
  model["fitting_net"]["trainable"] = "no";
  CHECK_THROWS_WITH(
      ModelConfig::from_json(model, "in.json"),
      Catch::Matchers::StartsWith("in.json: model key 'model.fitting_net.trainable' must be true, false"));
  model["fitting_net"]["trainable"] = false;
  model["descriptor"]["trainable"] = false;
  CHECK_THROWS_WITH(
      ModelConfig::from_json(model, "in.json"),
      "in.json: model keys 'model.descriptor.trainable' and 'model.fitting_net.trainable' are both "
      "false: nothing would be trained");
}

TEST_CASE("water data_0 frames load into a batch and evaluate with finite outputs", "[model]") {
  const auto sys = read_water(require_shared_dataset("water/data_0"));
  auto mc = ModelConfig::from_json(water_reference_model());
  const auto batch = make_batch(sys, {0, 5}, mc, torch::kCPU, torch::kFloat64);
  CHECK(batch.natoms == 192);
  CHECK(batch.ndropped == 0);
  CHECK(batch.max_count[0] <= 46);
  CHECK(batch.max_count[1] <= 92);
  CHECK(batch.coord.sizes() == torch::IntArrayRef({2, 192, 3}));
  CHECK(batch.force.sizes() == torch::IntArrayRef({2, 192, 3}));
  CHECK_FALSE(batch.has_virial);
  CHECK(batch.energy[1].item<double>() == Approx(sys.energy[5]));

  DeepPot model(mc);
  // statistics and bias from the batch itself, by add_batch and by hand from the same tensors
  StatisticsSums stats(2), by_hand(2);
  stats.add_batch(batch, mc);
  const auto env =
      environment_matrix(pair_vectors(batch.coord, batch.nlist, batch.shift, mc.rcut), mc.rcut, mc.rcut_smth);
  by_hand.add_environment(env, batch.atype);
  by_hand.add_energy(batch.energy, batch.atype);
  CHECK(stats.pack() == by_hand.pack());
  const auto [davg, dstd] = stats.descriptor_statistics(mc.nnei());
  model->set_statistics(davg, dstd);
  model->set_energy_bias(stats.energy_bias(mc.type_map).bias);
  const auto out = model->evaluate(batch.coord, batch.atype, batch.nlist, batch.shift);
  CHECK(torch::isfinite(out.energy).all().item<bool>());
  CHECK(torch::isfinite(out.force).all().item<bool>());
  CHECK(torch::isfinite(out.virial).all().item<bool>());
  // with the fitted bias the energies land near the DFT energies (within 1 eV per atom for random weights)
  CHECK((out.energy - batch.energy).abs().max().item<double>() < 192.0);
  // the sum of forces of a periodic system vanishes
  CHECK(out.force.sum(1).abs().max().item<double>() < 1e-9 * out.force.abs().max().item<double>() * 192);

  // an element missing from the model's type map
  auto other = mc;
  other.type_map = {"O", "C"};
  CHECK_THROWS_WITH(make_batch(sys, {0}, other, torch::kCPU, torch::kFloat64), Catch::Contains("'H'"));
  CHECK_THROWS_AS(make_batch(sys, {sys.nframes}, mc, torch::kCPU, torch::kFloat64), DataError);
}
