// ModelConfig, parameter counts, statistics, the model file and batches of real data.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "src/core/Error.hpp"
#include "src/model/Batch.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/ModelFile.hpp"
#include "src/model/Statistics.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

nlohmann::json water_reference_model() {
  const auto dir = require_shared_dataset("water");
  std::ifstream in(dir + "/input_se_e2_a.reference.json");
  return nlohmann::json::parse(in)["model"];
}

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
    model["descriptor"]["type"] = "se_e3";
    CHECK_THROWS_WITH(ModelConfig::from_json(model), Catch::Contains("se_e3"));
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
    model["type_embedding"] = {{"neuron", {8}}};
    CHECK_THROWS_WITH(
        ModelConfig::from_json(model, "in.json"),
        "model key 'model.type_embedding' in in.json asks for a type embedding (se_atten and DPA "
        "descriptors), which deepkf does not build: it trains one se_e2_a energy model");
    model = water_reference_model();
    model["models"] = nlohmann::json::array();
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"), Catch::Contains("'model.models' in in.json"));
    model = water_reference_model();
    model["descriptor"] = {{"type", "hybrid"}, {"list", nlohmann::json::array()}};
    CHECK_THROWS_WITH(ModelConfig::from_json(model, "in.json"),
                      "model key 'model.descriptor.type' in in.json is \"hybrid\": deepkf builds the se_e2_a "
                      "descriptor (also written se_a) only");
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

TEST_CASE("davg and dstd equal a direct computation on a tiny system", "[model]") {
  ModelConfig mc = small_config(true, false);
  mc.sel = {3, 4};
  const auto c = jittered_cell({4.0, 0, 0, 0.5, 4.2, 0, 0, 0.3, 3.9}, 2, 2, 5, 0.2);
  const auto nl =
      build_neighbor_list(c.coord.data(), c.natoms(), c.types.data(), c.box.data(), mc.rcut, mc.sel);
  REQUIRE(nl.ndropped > 0);  // a full sel and dropped neighbours are part of what is tested
  // direct: rows of R~ per centre type, padding rows counted as zeros
  std::vector<std::vector<std::array<double, 4>>> rows(2);
  for (std::int64_t i = 0; i < c.natoms(); ++i) {
    for (std::int64_t s = 0; s < mc.nnei(); ++s) {
      std::array<double, 4> row{0, 0, 0, 0};
      const auto j = nl.index[i * mc.nnei() + s];
      if (j >= 0) {
        double r[3], len2 = 0;
        for (int a = 0; a < 3; ++a) {
          r[a] = c.coord[3 * j + a] + nl.shift[(i * mc.nnei() + s) * 3 + a] - c.coord[3 * i + a];
          len2 += r[a] * r[a];
        }
        const double len = std::sqrt(len2);
        const double sw = switch_w(len, mc.rcut, mc.rcut_smth) / len;
        row = {sw, sw * r[0] / len, sw * r[1] / len, sw * r[2] / len};
      }
      rows[c.types[i]].push_back(row);
    }
  }
  const auto in = make_inputs(c, mc);
  const auto env =
      environment_matrix(pair_vectors(in.coord, in.nlist, in.shift, mc.rcut), mc.rcut, mc.rcut_smth);
  // accumulate in two halves of the atoms, merged, to exercise merge()
  StatisticsSums a(2), b(2);
  const auto half = c.natoms() / 2;
  a.add_environment(env.narrow(1, 0, half), in.atype.narrow(1, 0, half));
  b.add_environment(env.narrow(1, half, c.natoms() - half), in.atype.narrow(1, half, c.natoms() - half));
  a.merge(b);
  const auto [davg, dstd] = a.descriptor_statistics(mc.nnei());
  for (int t = 0; t < 2; ++t) {
    double n = 0, s0 = 0, q0 = 0, s1 = 0, q1 = 0;
    for (const auto& r : rows[t]) {
      n += 1;
      s0 += r[0];
      q0 += r[0] * r[0];
      for (int k = 1; k < 4; ++k) {
        s1 += r[k];
        q1 += r[k] * r[k];
      }
    }
    const double mean0 = s0 / n;
    const double std0 = std::max(std::sqrt(q0 / n - mean0 * mean0), 1e-2);
    const double std1 = std::max(std::sqrt(q1 / (3 * n) - (s1 / (3 * n)) * (s1 / (3 * n))), 1e-2);
    INFO("centre type " << t);
    CHECK(mean0 > 0);
    for (std::int64_t s = 0; s < mc.nnei(); ++s) {
      CHECK(davg[t][s][0].item<double>() == Approx(mean0).epsilon(1e-12));
      CHECK(davg[t][s].narrow(0, 1, 3).abs().max().item<double>() == 0.0);
      CHECK(dstd[t][s][0].item<double>() == Approx(std0).epsilon(1e-12));
      for (int k = 1; k < 4; ++k) CHECK(dstd[t][s][k].item<double>() == Approx(std1).epsilon(1e-12));
    }
  }
  // pack / unpack round trip
  StatisticsSums c2(2);
  c2.unpack(a.pack());
  CHECK(c2.pack() == a.pack());
}

TEST_CASE("energy bias solves an exactly solvable least-squares system", "[model]") {
  // frames with (nA, nB) atoms and energies E = -3.5 nA - 1.25 nB
  StatisticsSums s(3);
  auto add = [&](const std::vector<int64_t>& types_row, int nframes) {
    const auto t = torch::tensor(types_row, torch::kInt64).view({1, -1}).expand({nframes, -1});
    const auto na = static_cast<double>(std::count(types_row.begin(), types_row.end(), 0));
    const auto nb = static_cast<double>(std::count(types_row.begin(), types_row.end(), 1));
    s.add_energy(torch::full({nframes}, -3.5 * na - 1.25 * nb, torch::kFloat64), t);
  };
  add({0, 1, 1}, 2);
  add({0, 0, 1, 1, 1}, 1);
  add({1, 1, 1, 1}, 3);
  const auto bias = s.energy_bias({"A", "B", "C"});
  CHECK(bias.bias[0].item<double>() == Approx(-3.5).epsilon(1e-10));
  CHECK(bias.bias[1].item<double>() == Approx(-1.25).epsilon(1e-10));
  CHECK(bias.bias[2].item<double>() == 0.0);
  REQUIRE(bias.warnings.size() == 1);
  CHECK_THAT(bias.warnings[0], Catch::Contains("'C'"));
  // one composition only (as in water): the minimum-norm solution b = c (c.b = e/|c|^2 ... ) reproduces E
  StatisticsSums w(2);
  const auto types = torch::tensor(std::vector<int64_t>{0, 1, 1}, torch::kInt64).view({1, 3}).expand({4, 3});
  w.add_energy(torch::tensor({-10.0, -10.2, -9.8, -10.0}, torch::kFloat64), types);
  const auto wb = w.energy_bias({"O", "H"}).bias;
  // min-norm: b = mean(E) c / |c|^2 with c = (1, 2)
  CHECK(wb[0].item<double>() == Approx(-10.0 / 5).epsilon(1e-10));
  CHECK(wb[1].item<double>() == Approx(-20.0 / 5).epsilon(1e-10));
}

TEST_CASE("model files round-trip bit-identically and bad files give ModelError", "[model]") {
  const auto dir = make_temp_dir("model_file");
  const auto path = dir + "/model.pt";
  auto model = small_model(false, true);
  model->set_energy_bias(torch::tensor({-2.0, 0.5}, torch::kFloat64));
  const nlohmann::json provenance = {{"steps", 42}, {"data", {"a/b"}}};
  save_model(path, model, provenance);
  const auto c = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  const auto ref = run(model, c);

  const auto loaded = load_model(path, torch::kCPU);
  CHECK(loaded.provenance == provenance);
  CHECK(loaded.format_version == 2);
  CHECK(loaded.checksum.find("verified") != std::string::npos);
  CHECK(loaded.config.to_json() == model->config().to_json());
  auto m2 = loaded.model;
  const auto out = run(m2, c);
  CHECK(torch::equal(out.energy, ref.energy));
  CHECK(torch::equal(out.force, ref.force));
  CHECK(torch::equal(out.virial, ref.virial));
  CHECK(torch::equal(m2->davg(), model->davg()));
  CHECK(torch::equal(m2->energy_bias(), model->energy_bias()));
  CHECK(read_model_metadata(path)["sel"] == nlohmann::json({20, 20}));
  // The same model written as another format version would write it (metadata and weights, no checksums).
  const auto write_with_version = [&](int version, const std::string& to) {
    auto meta = read_model_metadata(path);
    meta["format_version"] = version;
    torch::serialize::OutputArchive weights;
    model->save(weights);
    torch::serialize::OutputArchive archive;
    archive.write("deepkf_metadata", c10::IValue(meta.dump()));
    archive.write("deepkf_model", weights);
    archive.save_to(to);
  };

  SECTION("missing") { CHECK_THROWS_WITH(load_model(dir + "/none.pt"), Catch::Contains("none.pt")); }
  SECTION("truncated") {
    const auto size = std::filesystem::file_size(path);
    std::filesystem::copy_file(path, dir + "/cut.pt");
    std::filesystem::resize_file(dir + "/cut.pt", size / 2);
    CHECK_THROWS_AS(load_model(dir + "/cut.pt"), ModelError);
    CHECK_THROWS_WITH(load_model(dir + "/cut.pt"), Catch::Contains("cut.pt"));
  }
  SECTION("garbage") {
    std::ofstream(dir + "/junk.pt") << "not a model";
    CHECK_THROWS_WITH(load_model(dir + "/junk.pt"), Catch::Contains("junk.pt"));
  }
  SECTION("flipped bytes in a tensor or in the metadata are named") {
    // The stored bytes of the energy bias (-2, 0.5 in float64) are in the file as they are.
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const double bias[2] = {-2.0, 0.5};
    const auto at = bytes.find(std::string(reinterpret_cast<const char*>(bias), sizeof bias));
    REQUIRE(at != std::string::npos);
    auto flipped = bytes;
    flipped[at + 3] = static_cast<char>(flipped[at + 3] ^ 0x10);
    std::ofstream(dir + "/flipped.pt", std::ios::binary) << flipped;
    CHECK_THROWS_WITH(load_model(dir + "/flipped.pt"), Catch::Contains("flipped.pt") &&
                                                           Catch::Contains("corrupt") &&
                                                           Catch::Contains("tensor 'energy_bias'"));
    // "rcut_smth" appears only in the metadata text: change its value's first digit.
    auto meta_flipped = bytes;
    const auto key = meta_flipped.find("\"rcut_smth\":");
    REQUIRE(key != std::string::npos);
    auto& digit = meta_flipped[key + 12];
    REQUIRE(digit >= '0');
    REQUIRE(digit < '9');
    digit = static_cast<char>(digit + 1);
    std::ofstream(dir + "/meta.pt", std::ios::binary) << meta_flipped;
    CHECK_THROWS_WITH(load_model(dir + "/meta.pt"),
                      Catch::Contains("meta.pt") && Catch::Contains("metadata"));
  }
  SECTION("format 1 (no checksums) still loads") {
    write_with_version(1, dir + "/old.pt");
    const auto old = load_model(dir + "/old.pt");
    CHECK(old.format_version == 1);
    CHECK(old.checksum == "none (format 1)");
    auto old_model = old.model;
    CHECK(torch::equal(run(old_model, c).energy, ref.energy));
  }
  SECTION("a checkpoint given as a model says to export it") {
    std::ofstream(dir + "/run.ckpt", std::ios::binary) << std::string("DEEPKFCK") + std::string(64, '\0');
    CHECK_THROWS_WITH(load_model(dir + "/run.ckpt"), Catch::Contains("run.ckpt") &&
                                                         Catch::Contains("checkpoint") &&
                                                         Catch::Contains("export"));
  }
  SECTION("newer format version") {
    write_with_version(3, dir + "/new.pt");
    CHECK_THROWS_WITH(load_model(dir + "/new.pt"), Catch::Contains("new.pt") && Catch::Contains("version 3"));
  }
  std::filesystem::remove_all(dir);
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
