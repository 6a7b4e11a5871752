// ModelConfig, parameter counts and batches of real data.
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

TEST_CASE("ModelConfig reads DeePMD-kit's keys and defaults and rejects bad values", "[model]") {
  SECTION("the water reference settings") {
    const auto mc = ModelConfig::from_json(water_reference_model());
    CHECK(mc.type_map == std::vector<std::string>{"O", "H"});
    CHECK(mc.rcut == 6.0);
    CHECK(mc.rcut_smth == 0.5);
    CHECK(mc.sel == std::vector<int>{46, 92});
    CHECK(mc.embedding_neuron == std::vector<int>{25, 50, 100});
    CHECK(mc.axis_neuron == 16);
    CHECK(mc.type_one_side);
    CHECK_FALSE(mc.embedding_resnet_dt);
    CHECK(mc.fitting_neuron == std::vector<int>{240, 240, 240});
    CHECK(mc.fitting_resnet_dt);
    CHECK(mc.precision == torch::kFloat64);
    // to_json -> from_json round trip
    const auto back = ModelConfig::from_json(mc.to_json());
    CHECK(back.to_json() == mc.to_json());
  }
  SECTION("defaults") {
    const auto mc = ModelConfig::from_json(
        {{"type_map", {"Si"}}, {"descriptor", {{"type", "se_e2_a"}, {"sel", {10}}, {"rcut", 5.0}}}});
    CHECK(mc.embedding_neuron == std::vector<int>{10, 20, 40});
    CHECK(mc.axis_neuron == 4);
    CHECK_FALSE(mc.type_one_side);
    CHECK_FALSE(mc.embedding_resnet_dt);
    CHECK(mc.fitting_neuron == std::vector<int>{120, 120, 120});
    CHECK(mc.fitting_resnet_dt);
    CHECK(mc.precision == torch::kFloat64);
  }
  SECTION("sel auto and float32") {
    const auto mc = ModelConfig::from_json(
        {{"type_map", {"C", "H"}},
         {"descriptor", {{"type", "se_a"}, {"sel", "auto:1.2"}, {"precision", "float32"}}},
         {"fitting_net", {{"precision", "float32"}}}});
    CHECK(mc.sel_auto);
    CHECK(mc.sel_auto_factor == Approx(1.2));
    CHECK(mc.precision == torch::kFloat32);
  }
  SECTION("bad values name the key and value") {
    auto model = water_reference_model();
    model["descriptor"]["rcut_smth"] = 7.0;
    CHECK_THROWS_WITH(ModelConfig::from_json(model), Catch::Contains("rcut_smth") && Catch::Contains("7.0"));
    model = water_reference_model();
    model["descriptor"]["sel"] = {46};
    CHECK_THROWS_AS(ModelConfig::from_json(model), ConfigError);
    model = water_reference_model();
    model["descriptor"]["precision"] = "float16";
    CHECK_THROWS_WITH(ModelConfig::from_json(model), Catch::Contains("float16"));
    model = water_reference_model();
    model["descriptor"]["type"] = "se_atten";
    CHECK_THROWS_WITH(ModelConfig::from_json(model), Catch::Contains("se_atten"));
    model = water_reference_model();
    model["descriptor"]["axis_neuron"] = 200;
    CHECK_THROWS_WITH(ModelConfig::from_json(model),
                      Catch::Contains("axis_neuron") && Catch::Contains("200"));
    model = water_reference_model();
    model["fitting_net"]["precision"] = "float32";
    CHECK_THROWS_AS(ModelConfig::from_json(model), ConfigError);
    model = water_reference_model();
    model["descriptor"]["activation_function"] = "gelu";
    CHECK_THROWS_WITH(ModelConfig::from_json(model),
                      Catch::Contains("activation_function") && Catch::Contains("gelu"));
    model = water_reference_model();
    model["fitting_net"]["numb_fparam"] = 2;
    CHECK_THROWS_WITH(ModelConfig::from_json(model), Catch::Contains("numb_fparam"));
    model = water_reference_model();
    model["descriptor"]["activation_function"] = "tanh";
    model["descriptor"]["exclude_types"] = nlohmann::json::array();
    CHECK_NOTHROW(ModelConfig::from_json(model));
  }
  SECTION("misspelt keys are errors with the nearest key; DeePMD-kit's other keys are accepted") {
    auto model = water_reference_model();
    model["fitting_net"]["neurons"] = {10};
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      "unknown key 'neurons' in model.fitting_net of in.json; did you mean 'neuron'?");
    model = water_reference_model();
    model["descriptor"]["rcutt"] = 5.0;
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      "unknown key 'rcutt' in model.descriptor of in.json; did you mean 'rcut'?");
    // DeePMD-kit's other models are refused by name, before their own keys are taken for misspellings.
    model = water_reference_model();
    model["models"] = nlohmann::json::array();
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"), Catch::Contains("'model.models' in in.json"));
    model = water_reference_model();
    model["descriptor"] = {{"type", "se_atten"}};
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      "model key 'model.descriptor.type' in in.json is \"se_atten\": deepkf builds the "
                      "descriptors se_e2_a (also written se_a; with a type embedding also se_a_ebd_v2), "
                      "se_e2_r (se_r), se_e3 (se_at, se_a_3be, se_t) and hybrid combinations of them");
    model["descriptor"] = {{"type", "hybrid"}, {"list", nlohmann::json::array()}};
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      Catch::Contains("'model.descriptor.list' in in.json must be a non-empty list"));
    // se_e2_r (se_r) is read with se_e2_a's keys but axis_neuron, and written back as se_e2_r.
    model = water_reference_model();
    model["descriptor"]["type"] = "se_r";
    model["descriptor"].erase("axis_neuron");
    const auto radial = ModelConfig::from_json(model, "in.json");
    CHECK(radial.descriptor == "se_e2_r");
    CHECK(radial.descriptor_dim() == radial.embedding_width());
    CHECK(radial.to_json()["descriptor"]["type"] == "se_e2_r");
    CHECK_FALSE(radial.to_json()["descriptor"].contains("axis_neuron"));
    CHECK(ModelConfig::from_json(radial.to_json(), "again.json").differences(radial).empty());
    model["descriptor"]["axis_neuron"] = 4;
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      Catch::Contains("unknown key 'axis_neuron' in model.descriptor of in.json"));
    // se_e3 (also se_at, se_a_3be, se_t) has neither axis_neuron nor type_one_side; its nets are one per
    // pair of neighbour types; a missing sel is DeePMD-kit's "auto".
    model = water_reference_model();
    model["descriptor"]["type"] = "se_at";
    model["descriptor"].erase("axis_neuron");
    model["descriptor"].erase("type_one_side");
    const auto three = ModelConfig::from_json(model, "in.json");
    CHECK(three.descriptor == "se_e3");
    CHECK(three.descriptor_dim() == three.embedding_width());
    CHECK(three.embedding_count() == 3);
    CHECK(three.embedding_index(1, 0) == 1);
    CHECK(three.embedding_index(1, 1) == 2);
    CHECK_FALSE(three.to_json()["descriptor"].contains("type_one_side"));
    CHECK(ModelConfig::from_json(three.to_json(), "again.json").differences(three).empty());
    model["descriptor"].erase("sel");
    CHECK(ModelConfig::from_json(model, "in.json").sel_auto);
    model["descriptor"]["type_one_side"] = true;
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      Catch::Contains("unknown key 'type_one_side' in model.descriptor of in.json"));
    // hybrid: DeePMD-kit's examples/water/hybrid descriptor (se_e2_a rcut 4 sel 20/40 beside se_e2_r rcut
    // 6 sel 46/92), read from one neighbour list of rcut 6 and sel 46/92.
    model = water_reference_model();
    const nlohmann::json angular = {{"type", "se_e2_a"}, {"sel", {20, 40}},        {"rcut_smth", 0.5},
                                    {"rcut", 4.0},       {"neuron", {10, 20, 40}}, {"resnet_dt", false},
                                    {"axis_neuron", 4},  {"type_one_side", true},  {"precision", "float64"},
                                    {"seed", 1}};
    const nlohmann::json radial_part = {
        {"type", "se_e2_r"},     {"sel", {46, 92}},        {"rcut_smth", 0.5},
        {"rcut", 6.0},           {"neuron", {5, 10, 20}},  {"resnet_dt", false},
        {"type_one_side", true}, {"precision", "float64"}, {"seed", 1}};
    model["descriptor"] = {{"type", "hybrid"}, {"list", {angular, radial_part}}};
    model["fitting_net"].erase("precision");
    const auto hybrid = ModelConfig::from_json(model, "in.json");
    REQUIRE(hybrid.hybrid());
    REQUIRE(hybrid.parts.size() == 2);
    CHECK(hybrid.rcut == 6.0);
    CHECK(hybrid.sel == std::vector<int>{46, 92});
    CHECK(hybrid.descriptor_dim() == 40 * 4 + 20);
    CHECK(hybrid.statistics_slots() == 60 + 138);
    CHECK(hybrid.embedding_count() == 4);
    const auto slots = hybrid.part_slots(0);
    REQUIRE(slots.size() == 60);
    CHECK(slots[19] == 19);
    CHECK(slots[20] == 46);
    CHECK(slots[59] == 85);
    CHECK(ModelConfig::from_json(hybrid.to_json(), "again.json").differences(hybrid).empty());
    auto nested = model;
    nested["descriptor"]["list"][1] = {{"type", "hybrid"}, {"list", {angular}}};
    CHECK_THROWS_WITH(ModelConfig::from_json(nested, "in.json"),
                      Catch::Contains("'model.descriptor.list[1].type' in in.json is \"hybrid\""));
    auto misspelt = model;
    misspelt["descriptor"]["list"][1]["axis_neuron"] = 4;
    CHECK_THROWS_WITH(ModelConfig::from_json(misspelt, "in.json"),
                      Catch::Contains("unknown key 'axis_neuron' in model.descriptor.list[1] of in.json"));
    auto mixed = model;
    mixed["descriptor"]["list"][1]["precision"] = "float32";
    CHECK_THROWS_WITH(ModelConfig::from_json(mixed, "in.json"), Catch::Contains("share one precision"));
    auto auto_sel = model;
    auto_sel["descriptor"]["list"][0]["sel"] = "auto";
    CHECK(ModelConfig::from_json(auto_sel, "in.json").sel_auto);
    model = water_reference_model();
    model["fitting_net"]["type"] = "dipole";
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      Catch::Contains("'model.fitting_net.type' in in.json is \"dipole\""));
    model = water_reference_model();
    model["data_stat_nbatch"] = 20;
    model["descriptor"]["trainable"] = true;
    model["fitting_net"]["rcond"] = 1e-3;
    model["_comment"] = "that's all";
    CHECK_NOTHROW(ModelConfig::from_json(model, "in.json"));
  }
}

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
  const auto out = model->evaluate(batch.coord, batch.atype, batch.nlist, batch.shift, false);
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
