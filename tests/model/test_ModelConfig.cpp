// ModelConfig: DeePMD-kit's model section read with its keys and defaults, bad values and misspelt keys
// named, the descriptors deepkf does not build refused by name, hybrid lists combined.
#include <string>
#include <vector>

#include "src/core/Error.hpp"
#include "src/model/ModelConfig.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"

using namespace deepkf;
using namespace deepkf::test;

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
    model["descriptor"]["type"] = "dpa2";
    CHECK_THROWS_WITH(ModelConfig::from_json(model), Catch::Contains("dpa2"));
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
    model["descriptor"] = {{"type", "dpa2"}};
    CHECK_THROWS_WITH(
        ModelConfig::from_json(model, "in.json"),
        "model key 'model.descriptor.type' in in.json is \"dpa2\": deepkf builds the "
        "descriptors se_e2_a (also written se_a; with a type embedding also se_a_ebd_v2), "
        "se_e2_r (se_r), se_e3 (se_at, se_a_3be, se_t), se_atten (dpa1, se_atten_v2), se_e3_tebd "
        "and hybrid combinations of the first three");
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

namespace {

// A descriptor section `base` with `key` set to `value` is refused with a message naming the key and `says`.
void refused_descriptor_key(const nlohmann::json& base, const std::string& key, const nlohmann::json& value,
                            const std::string& says) {
  auto m = base;
  m["descriptor"][key] = value;
  INFO(key << " = " << value.dump());
  CHECK_THROWS_WITH(ModelConfig::from_json(m, "in.json"),
                    Catch::Contains("model.descriptor." + key) && Catch::Contains(says));
}

}  // namespace

TEST_CASE("se_atten sections read DeePMD-kit's keys, defaults and spellings", "[model]") {
  // DeePMD-kit's examples/water/se_atten_dpa1_compat descriptor, then its variants
  const nlohmann::json base = {{"type_map", {"O", "H"}},
                               {"descriptor",
                                {{"type", "se_atten"},
                                 {"sel", 120},
                                 {"rcut_smth", 0.5},
                                 {"rcut", 6.0},
                                 {"neuron", {25, 50, 100}},
                                 {"axis_neuron", 16},
                                 {"attn", 128},
                                 {"attn_layer", 2},
                                 {"attn_dotr", true},
                                 {"attn_mask", false}}},
                               {"fitting_net", {{"neuron", {240, 240, 240}}}}};
  SECTION("se_atten: concat, DeePMD-kit's defaults, one sel for all types") {
    const auto c = ModelConfig::from_json(base, "in.json");
    CHECK(c.descriptor == "se_atten");
    CHECK(c.mixed_types());
    CHECK(c.sel == std::vector<int>{120});
    CHECK(c.tebd_input_mode == "concat");
    CHECK(c.type_embedding.neuron == std::vector<int>{8});
    CHECK(c.type_embedding.linear);
    CHECK_FALSE(c.type_embedding.bias);
    CHECK(c.attention.layers == 2);
    CHECK(c.attention.width == 128);
    CHECK(c.attention.set_davg_zero);
    CHECK_FALSE(c.attention.smooth);
    CHECK(c.attention.normalize);
    CHECK(c.attention.scaling(128) == Approx(1.0 / std::sqrt(128.0)));
    CHECK(c.attention.ln_eps == 1e-5);
    CHECK(c.descriptor_dim() == 100 * 16 + 8);  // D_i then tebd_i (concat_output_tebd)
    CHECK(c.fitting_input_dim() == c.descriptor_dim());
    const auto again = ModelConfig::from_json(c.to_json(), "again.json");
    CHECK(again.differences(c).empty());
    CHECK(again.to_json() == c.to_json());
  }
  SECTION("se_atten_v2 and dpa1 spellings, sel as a list, temperature, strip") {
    auto v2 = base;
    v2["descriptor"]["type"] = "se_atten_v2";
    v2["descriptor"]["sel"] = {40, 80};
    const auto c = ModelConfig::from_json(v2, "in.json");
    CHECK(c.sel == std::vector<int>{120});
    CHECK(c.tebd_input_mode == "strip");
    CHECK(c.attention.smooth);
    CHECK_FALSE(c.attention.set_davg_zero);
    CHECK(ModelConfig::from_json(c.to_json(), "again.json").differences(c).empty());
    auto dpa1 = base;
    dpa1["descriptor"]["type"] = "dpa1";
    dpa1["descriptor"]["temperature"] = 1.0;
    dpa1["descriptor"]["type_one_side"] = true;
    dpa1["descriptor"]["stripped_type_embedding"] = true;
    dpa1["descriptor"]["smooth_type_embdding"] = true;  // DeePMD-kit's misspelt alias
    dpa1["descriptor"]["tebd_dim"] = 4;
    dpa1["descriptor"]["concat_output_tebd"] = false;
    const auto d = ModelConfig::from_json(dpa1, "in.json");
    CHECK(d.attention.scaling(128) == 1.0);
    CHECK(d.stripped());
    CHECK(d.attention.smooth);
    CHECK(d.type_embedding.neuron == std::vector<int>{4});
    CHECK(d.descriptor_dim() == 100 * 16);
    CHECK(ModelConfig::from_json(d.to_json(), "again.json").differences(d).empty());
  }
  SECTION("a model section's type_embedding replaces the descriptor's linear one") {
    auto tf = base;
    tf["type_embedding"] = {{"neuron", {2, 4, 8}}};
    const auto c = ModelConfig::from_json(tf, "in.json");
    CHECK(c.type_embedding.neuron == std::vector<int>{2, 4, 8});
    CHECK_FALSE(c.type_embedding.linear);
    const auto again = ModelConfig::from_json(c.to_json(), "again.json");
    CHECK(again.differences(c).empty());
    CHECK(again.type_embedding.neuron == c.type_embedding.neuron);
  }
  SECTION("options not built and bad values are refused by key") {
    const auto refused = [&](const std::string& key, const nlohmann::json& value, const std::string& says) {
      refused_descriptor_key(base, key, value, says);
    };
    refused("attn_mask", true, "attn_mask");
    refused("lmax", 2, "lmax 1");
    refused("use_econf_tebd", true, "electronic-configuration");
    refused("attn_layer", -1, "0 or more");
    refused("attn", 0, "at least 1");
    refused("tebd_input_mode", "mix", "\"concat\" or \"strip\"");
    refused("temperature", "hot", "number");
    refused("exclude_types", nlohmann::json::array({nlohmann::json::array({0, 1})}), "not supported");
    refused("sel", nlohmann::json::array({-1, 4}), "negative");
    auto v2 = base;
    v2["descriptor"]["type"] = "se_atten_v2";
    v2["descriptor"]["tebd_input_mode"] = "concat";  // not a key of se_atten_v2
    CHECK_THROWS_WITH(ModelConfig::from_json(v2, "in.json"), Catch::Contains("tebd_input_mode"));
    auto hybrid = base;
    hybrid["descriptor"] = {{"type", "hybrid"}, {"list", {base["descriptor"]}}};
    CHECK_THROWS_WITH(ModelConfig::from_json(hybrid, "in.json"),
                      Catch::Contains("'model.descriptor.list[0].type' in in.json is \"se_atten\""));
  }
}

TEST_CASE("se_e3_tebd sections read DeePMD-kit's keys and defaults", "[model]") {
  // DeePMD-kit's examples/water/se_e3_tebd/input_torch.json descriptor
  const nlohmann::json base = {{"type_map", {"O", "H"}},
                               {"descriptor",
                                {{"type", "se_e3_tebd"},
                                 {"sel", 40},
                                 {"rcut_smth", 0.5},
                                 {"rcut", 4.0},
                                 {"neuron", {2, 4, 8}},
                                 {"tebd_dim", 8},
                                 {"tebd_input_mode", "concat"},
                                 {"activation_function", "tanh"},
                                 {"seed", 1}}},
                               {"fitting_net", {{"neuron", {240, 240, 240}}}}};
  SECTION("concat, DeePMD-kit's defaults, one sel for all types") {
    auto defaults = base;
    defaults["descriptor"].erase("neuron");
    const auto c = ModelConfig::from_json(defaults, "in.json");
    CHECK(c.descriptor == "se_e3_tebd");
    CHECK(c.three_body_tebd());
    CHECK(c.mixed_types());
    CHECK(c.sel == std::vector<int>{40});
    CHECK(c.embedding_neuron == std::vector<int>{2, 4, 8});
    CHECK(c.type_embedding.neuron == std::vector<int>{8});
    CHECK(c.type_embedding.linear);
    CHECK(c.attention.smooth);
    CHECK(c.attention.set_davg_zero);
    CHECK(c.attention.concat_output_tebd);
    CHECK(c.type_input_dim() == 16);         // [tebd_j, tebd_k]
    CHECK(c.descriptor_dim() == 8 + 8);      // D_i then tebd_i
    CHECK(c.embedding_inputs() == 40 * 40);  // every ordered pair of slots
    CHECK(c.fitting_input_dim() == c.descriptor_dim());
    const auto again = ModelConfig::from_json(c.to_json(), "again.json");
    CHECK(again.differences(c).empty());
    CHECK(again.to_json() == c.to_json());
    CHECK_FALSE(c.to_json()["descriptor"].contains("type_one_side"));
    CHECK_FALSE(c.to_json()["descriptor"].contains("attn_layer"));
  }
  SECTION("strip, sel as a list, smooth and concat_output_tebd off") {
    auto s = base;
    s["descriptor"]["tebd_input_mode"] = "strip";
    s["descriptor"]["sel"] = {10, 20};
    s["descriptor"]["smooth"] = false;
    s["descriptor"]["concat_output_tebd"] = false;
    s["descriptor"]["set_davg_zero"] = false;
    s["descriptor"]["tebd_dim"] = 3;
    const auto c = ModelConfig::from_json(s, "in.json");
    CHECK(c.sel == std::vector<int>{30});
    CHECK(c.stripped());
    CHECK_FALSE(c.attention.smooth);
    CHECK_FALSE(c.attention.set_davg_zero);
    CHECK(c.descriptor_dim() == 8);
    CHECK(c.type_input_dim() == 6);
    CHECK(ModelConfig::from_json(c.to_json(), "again.json").differences(c).empty());
  }
  SECTION("keys it does not have and options not built are refused by key") {
    const auto refused = [&](const std::string& key, const nlohmann::json& value, const std::string& says) {
      refused_descriptor_key(base, key, value, says);
    };
    for (const char* key : {"type_one_side", "axis_neuron", "attn_layer"}) {
      auto m = base;
      m["descriptor"][key] = 1;
      CHECK_THROWS_WITH(ModelConfig::from_json(m, "in.json"),
                        Catch::Contains(std::string("unknown key '") + key + "' in model.descriptor"));
    }
    refused("use_econf_tebd", true, "electronic-configuration");
    refused("tebd_input_mode", "mix", "\"concat\" or \"strip\"");
    refused("tebd_dim", 0, "at least 1");
    refused("exclude_types", nlohmann::json::array({nlohmann::json::array({0, 1})}), "not supported");
    auto hybrid = base;
    hybrid["descriptor"] = {{"type", "hybrid"}, {"list", {base["descriptor"]}}};
    CHECK_THROWS_WITH(ModelConfig::from_json(hybrid, "in.json"),
                      Catch::Contains("'model.descriptor.list[0].type' in in.json is \"se_e3_tebd\""));
  }
}
