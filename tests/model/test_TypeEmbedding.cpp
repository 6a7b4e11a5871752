// se_e2_a with a type embedding (model.type_embedding; tebd_input_mode "concat", and "strip" as DeePMD-kit's
// se_a_ebd_v2): DeePMD-kit's keys and defaults read and written back, what is refused and how, the nets it
// builds (one embedding net, one fitting net, a type net without biases unless use_tebd_bias), the model
// file round trip, and that the element types reach the energy through the embedded vectors. Energies,
// forces, virials, invariances and smoothness are tested with the other descriptors in test_DeepPot.cpp.
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

#include "src/core/Error.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;
using Catch::Matchers::Contains;

namespace {

// DeePMD-kit's examples/water/se_e2_a_tebd model section: the water reference model with the type
// embedding of that example (neuron [2, 4, 8]) and its descriptor type se_a_ebd_v2.
nlohmann::json tebd_example() {
  auto model = water_reference_model();
  model["type_embedding"] = {{"neuron", {2, 4, 8}},
                             {"activation_function", "tanh"},
                             {"resnet_dt", false},
                             {"precision", "float64"},
                             {"seed", 1}};
  model["descriptor"]["type"] = "se_a_ebd_v2";
  return model;
}

// 16 atoms of both types in a 5 A box, as an isolated cluster.
Config two_type_cluster() {
  auto c = jittered_cell({5.0, 0, 0, 0, 5.0, 0, 0, 0, 5.0}, 2, 2, 13, 0.2);
  c.box.clear();
  return c;
}

std::map<std::string, std::int64_t> counts(const DeepPot& model) {
  std::map<std::string, std::int64_t> out;
  for (const auto& [name, n] : model->parameter_counts()) out[name] = n;
  return out;
}

}  // namespace

TEST_CASE("a type embedding is read with DeePMD-kit's keys and defaults and written back", "[model][tebd]") {
  auto model = tebd_example();
  const auto mc = ModelConfig::from_json(model, "in.json");
  CHECK(mc.descriptor == "se_e2_a");
  CHECK(mc.type_embedded());
  CHECK(mc.stripped());
  CHECK(mc.type_embedding.neuron == std::vector<int>{2, 4, 8});
  CHECK_FALSE(mc.type_embedding.bias);
  CHECK(mc.embedding_count() == 1);
  // the fitting net reads D_i (M M< = 100 x 16) and tebd_i (8)
  CHECK(mc.fitting_input_dim() == 100 * 16 + 8);
  CHECK(mc.type_input_dim() == 8);  // the example's type_one_side true: tebd_j only
  // written back and read again: the same model, and the strip mode kept as se_a_ebd_v2
  const auto back = ModelConfig::from_json(mc.to_json(), "resolved.json");
  CHECK(back.differences(mc).empty());
  CHECK(mc.to_json()["descriptor"]["type"] == "se_a_ebd_v2");
  CHECK(mc.to_json()["type_embedding"]["use_tebd_bias"] == false);

  // se_e2_a with a type embedding: "concat"; the defaults (neuron [8]) for an empty section
  model["descriptor"]["type"] = "se_e2_a";
  model["type_embedding"] = nlohmann::json::object();
  model["descriptor"]["type_one_side"] = false;
  const auto concat = ModelConfig::from_json(model, "in.json");
  CHECK(concat.type_embedded());
  CHECK_FALSE(concat.stripped());
  CHECK(concat.type_embedding.neuron == std::vector<int>{8});
  CHECK(concat.type_input_dim() == 16);  // [tebd_j, tebd_i]
  CHECK(ModelConfig::from_json(concat.to_json()).differences(concat).empty());
  CHECK(concat.differences(mc).size() > 0);
}

TEST_CASE("type embedding settings deepkf does not build are refused in one line naming the key",
          "[model][tebd]") {
  auto model = tebd_example();
  model["type_embedding"]["use_econf_tebd"] = true;
  CHECK_THROWS_WITH(
      ModelConfig::from_json(model, "in.json"),
      Contains("'model.type_embedding.use_econf_tebd' in in.json") && Contains("does not build"));
  model = tebd_example();
  model["type_embedding"]["nueron"] = {8};
  CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                    Contains("unknown key 'nueron' in model.type_embedding") && Contains("'neuron'"));
  model = tebd_example();
  model["type_embedding"]["precision"] = "float32";
  CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                    Contains("'model.type_embedding.precision'") && Contains("one precision"));
  model = tebd_example();
  model["type_embedding"]["neuron"] = {8, 0};
  CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"), Contains("'model.type_embedding.neuron'"));
  model = tebd_example();
  model["type_embedding"]["activation_function"] = "gelu";
  CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                    Contains("'model.type_embedding.activation_function'") && Contains("tanh"));
  // se_a_ebd_v2 needs the section; other descriptors do not take one here
  model = tebd_example();
  model.erase("type_embedding");
  CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"), Contains("give the model a 'type_embedding'"));
  model = tebd_example();
  model["descriptor"]["type"] = "se_e2_r";
  model["descriptor"].erase("axis_neuron");
  CHECK_THROWS_WITH(
      ModelConfig::from_json(model, "in.json"),
      Contains("'model.type_embedding' works with the se_e2_a descriptor") && Contains("not with se_e2_r"));
}

TEST_CASE("a type-embedded model has one embedding net, one fitting net and a type net without biases",
          "[model][tebd]") {
  for (const bool strip : {false, true}) {
    INFO((strip ? "strip" : "concat"));
    const auto mc = small_config(false, false, strip ? "se_a_ebd_v2" : "se_e2_a_tebd");
    DeepPot model(mc);
    const auto n = counts(model);
    // one-hot 2 -> 2 -> 4 -> 8 without biases: 2x2 + 2x4 + 4x8 weights
    CHECK(n.at("type_embedding") == 4 + 8 + 32);
    // small_config's embedding widths 4, 8, 8, 16 from 1 input (strip) or [s, tebd_j, tebd_i] (1 + 16)
    const std::int64_t in = strip ? 1 : 17;
    CHECK(n.at("embedding[all]") == in * 4 + 4 + 4 * 8 + 8 + 8 * 8 + 8 + 8 * 16 + 16);
    CHECK(n.count("embedding[types]") == (strip ? 1u : 0u));
    if (strip) CHECK(n.at("embedding[types]") == 16 * 4 + 4 + 4 * 8 + 8 + 8 * 8 + 8 + 8 * 16 + 16);
    // fitting 16 x 3 + 8 -> 12 -> 12 -> 1
    CHECK(n.at("fitting[all]") == 56 * 12 + 12 + 12 * 12 + 12 + 12 + 1);
    CHECK(n.size() == (strip ? 4u : 3u));
    auto with_bias = mc;
    with_bias.type_embedding.bias = true;
    CHECK(counts(DeepPot(with_bias)).at("type_embedding") == 44 + 2 + 4 + 8);
  }
}

TEST_CASE("the element types reach a type-embedded energy through their vectors, and model files keep it",
          "[model][tebd]") {
  for (const std::string descriptor : {"se_e2_a_tebd", "se_a_ebd_v2"}) {
    INFO(descriptor);
    auto model = small_model(true, true, torch::kFloat64, descriptor);
    auto c = two_type_cluster();
    const double e = energy(model, c);
    // The same geometry with the two types' vectors swapped: the energy changes, and setting the vectors
    // back (swapping the one-hot inputs' rows of the first layer) restores it.
    auto params = model->named_parameters();
    auto w0 = params["type_embedding.w0"];
    {
      torch::NoGradGuard guard;
      w0.copy_(w0.flip(0));
    }
    const double swapped = energy(model, c);
    CHECK(std::abs(swapped - e) > 1e-6 * std::abs(e));
    {
      torch::NoGradGuard guard;
      w0.copy_(w0.flip(0));
    }
    CHECK(energy(model, c) == e);

    // A model file holds the type embedding and gives the same results.
    const auto dir = make_temp_dir("tebd-model-file");
    save_model(dir + "/model.pt", model, nlohmann::json::object());
    const auto loaded = load_model(dir + "/model.pt", torch::kCPU);
    CHECK(loaded.config.to_json() == model->config().to_json());
    auto back = loaded.model;
    const auto a = run(model, c), b = run(back, c);
    CHECK(torch::equal(a.energy, b.energy));
    CHECK(torch::equal(a.force, b.force));
    std::filesystem::remove_all(dir);
  }
}
