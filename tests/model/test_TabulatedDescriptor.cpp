// Compressed models (tables and the CPU kernel) against the uncompressed model on real frames (water,
// silicon) with errors that fall as the table step's power, against finite differences of their own energy
// (forces and virial), under symmetries, and independent of the thread count (the LAMMPS ghost layout:
// test_DeepPot.cpp).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "src/core/Error.hpp"
#include "src/data/Dataset.hpp"
#include "src/model/Batch.hpp"
#include "src/model/ModelFile.hpp"
#include "src/model/TabulatedDescriptor.hpp"
#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

double max_abs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

// Models trained by deepkf on the real datasets (tests/lammps_plugin/data/README.md).
const std::string kTestModels = DEEPKF_SOURCE_DIR "/tests/lammps_plugin/data";

TableSettings with_step(double step) {
  TableSettings s;
  s.step = step;
  return s;
}

// Largest differences of the compressed model to the uncompressed one: energy and virial per atom (eV),
// force components (eV/A).
struct Deviation {
  double energy = 0, force = 0, virial = 0;
};

Deviation deviation(const ModelOutput& c, const ModelOutput& ref, const Batch& b) {
  const double n = static_cast<double>(b.natoms);
  Deviation d;
  d.energy = max_abs(c.energy.to(torch::kFloat64) - ref.energy.to(torch::kFloat64)) / n;
  d.force = max_abs(c.force.to(torch::kFloat64) - ref.force.to(torch::kFloat64));
  d.virial = max_abs(c.virial.to(torch::kFloat64) - ref.virial.to(torch::kFloat64)) / n;
  return d;
}

ModelOutput evaluate(DeepPot& model, const Batch& b, bool atom_virial = false) {
  return model->evaluate(b.coord, b.atype, b.nlist, b.shift,
                         deepkf::EvalOptions::with_atom_virial(atom_virial));
}

// Compresses fresh copies of a model (make()) at steps 0.1, 0.05 and the default 0.01 on batch b and
// checks: the observed orders log2(err(0.1) / err(0.05)) near 6 for energies (G's error ~ h^6) and near 5
// or above for forces and virials (G' ~ h^5); at 0.01 each error within the tolerance derived from the
// coarse step, tol(h) = 2 err(0.1) (h / 0.1)^p (p = 6, 5, 5), or within float64 round-off of the values.
template <typename Make>
void check_against_uncompressed(const std::string& name, Make make, const Batch& b) {
  auto ref_model = make();
  const auto ref = evaluate(ref_model, b);
  std::vector<Deviation> devs;
  for (double step : {0.1, 0.05, 0.01}) {
    auto model = make();
    model->compress(with_step(step));
    devs.push_back(deviation(evaluate(model, b), ref, b));
  }
  const double e_scale = max_abs(ref.energy) / static_cast<double>(b.natoms);
  const double f_scale = max_abs(ref.force);
  const double w_scale = max_abs(ref.virial) / static_cast<double>(b.natoms);
  INFO(name << ": max deviation at steps 0.1 / 0.05 / 0.01: energy " << devs[0].energy << " / "
            << devs[1].energy << " / " << devs[2].energy << " eV/atom, force " << devs[0].force << " / "
            << devs[1].force << " / " << devs[2].force << " eV/A, virial " << devs[0].virial << " / "
            << devs[1].virial << " / " << devs[2].virial << " eV/atom");
  const double order_e = std::log2(devs[0].energy / devs[1].energy);
  const double order_f = std::log2(devs[0].force / devs[1].force);
  const double order_w = std::log2(devs[0].virial / devs[1].virial);
  INFO("observed orders: energy " << order_e << ", force " << order_f << ", virial " << order_w);
  CHECK(order_e > 5.0);
  CHECK(order_e < 7.5);
  CHECK(order_f > 4.0);
  CHECK(order_f < 7.5);
  CHECK(order_w > 4.0);
  CHECK(order_w < 7.5);
  const double r = 0.01 / 0.1;
  CHECK(devs[2].energy <= std::max(2 * devs[0].energy * std::pow(r, 6), 1e-13 * e_scale));
  CHECK(devs[2].force <= std::max(2 * devs[0].force * std::pow(r, 5), 1e-12 * f_scale));
  CHECK(devs[2].virial <= std::max(2 * devs[0].virial * std::pow(r, 5), 1e-12 * w_scale));
}

// A model of `mc` with random weights and the statistics and training range of frames 3 and 50 of `water`,
// evaluated on those frames in mc.precision uncompressed and compressed at the default settings: the
// compressed energies, forces and virials must lie within `tol` of the uncompressed ones (relative to the
// largest of each).
void check_default_tables(const ModelConfig& mc, const System& water, double tol) {
  const auto stats = make_batch(water, {3, 50}, mc, torch::kCPU, torch::kFloat64);
  const auto b = make_batch(water, {3, 50}, mc, torch::kCPU, mc.precision);
  REQUIRE(b.ndropped == 0);
  auto plain = model_with_data_statistics(mc, stats);
  auto compressed = model_with_data_statistics(mc, stats);
  compressed->compress(TableSettings{});
  const auto ref = evaluate(plain, b);
  const auto d = deviation(evaluate(compressed, b), ref, b);
  INFO(mc.descriptor << ", " << mc.precision_name() << ": energy " << d.energy << " eV/atom, force "
                     << d.force << " eV/A, virial " << d.virial << " eV/atom");
  CHECK(d.energy < tol * max_abs(ref.energy.to(torch::kFloat64)) / static_cast<double>(b.natoms));
  CHECK(d.force < tol * max_abs(ref.force.to(torch::kFloat64)));
  CHECK(d.virial < tol * max_abs(ref.virial.to(torch::kFloat64)) / static_cast<double>(b.natoms));
}

Config frame_config(const System& s, std::int64_t frame) {
  Config c;
  c.coord.assign(s.coord.begin() + frame * s.natoms * 3, s.coord.begin() + (frame + 1) * s.natoms * 3);
  c.types = s.atom_types;
  c.box.assign(s.box.begin() + frame * 9, s.box.begin() + frame * 9 + 9);
  return c;
}

Config triclinic_cell() { return jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11); }

DeepPot compressed_small(bool one_side, bool dt, c10::ScalarType precision = torch::kFloat64) {
  auto model = small_model(one_side, dt, precision);
  TrainingRange r(2);
  r.add({0.9, 1.0, 1.0, 1.1}, 1);
  model->set_training_range(r);
  model->compress(with_step(0.01));
  return model;
}

}  // namespace

TEST_CASE("compressed trained models agree with the uncompressed ones within a tolerance that scales",
          "[model][compress]") {
  SECTION("water: water_small.pt on water/data_3 (no training range recorded: the 0.5 A default)") {
    const auto water = Dataset::load({require_shared_dataset("water/data_3")}, {"O", "H"});
    const std::string path = kTestModels + "/water_small.pt";
    const auto mc = load_model(path).config;
    REQUIRE(load_model(path).model->training_range().empty());
    const auto b = make_batch(water.systems.at(0), {0, 17, 41, 79}, mc, torch::kCPU, torch::kFloat64);
    check_against_uncompressed(
        "water_small.pt", [&] { return load_model(path).model; }, b);
  }
  SECTION("silicon: si_small.pt (training range recorded) on si_mlearn/test's 64-atom system, virials") {
    const auto si = Dataset::load({require_shared_dataset("si_mlearn/test/sys_Si64")}, {"Si"});
    const std::string path = kTestModels + "/si_small.pt";
    const auto mc = load_model(path).config;
    REQUIRE_FALSE(load_model(path).model->training_range().empty());
    std::vector<std::int64_t> frames;
    for (std::int64_t f = 0; f < std::min<std::int64_t>(3, si.systems.at(0).nframes); ++f)
      frames.push_back(f);
    const auto b = make_batch(si.systems.at(0), frames, mc, torch::kCPU, torch::kFloat64);
    REQUIRE(b.has_virial);
    check_against_uncompressed(
        "si_small.pt", [&] { return load_model(path).model; }, b);
  }
}

TEST_CASE("the water reference settings (M = 100, sel 46/92) agree at the default step, float64 and float32",
          "[model][compress]") {
  // Random weights with the statistics and training range of the frames: smoother nets than trained ones,
  // so this checks the wide layout at one step rather than the error's order.
  const auto water = Dataset::load({require_shared_dataset("water/data_3")}, {"O", "H"});
  for (const auto precision : {torch::kFloat64, torch::kFloat32}) {
    auto mc = ModelConfig::from_json(water_reference_model());
    mc.precision = precision;
    check_default_tables(mc, water.systems.at(0), precision == torch::kFloat64 ? 1e-10 : 1e-4);
  }
}

TEST_CASE(
    "compressed se_e2_r, se_e3, se_a_ebd_v2, se_atten_v2 and se_e3_tebd models agree with the uncompressed "
    "ones and their forces are their energy derivatives",
    "[model][compress]") {
  // DeePMD-kit's se_e2_r, se_e3, se_e2_a_tebd, se_atten_compressible and se_e3_tebd water examples'
  // settings (embedding 5-10-20, 2-4-8 and 25-50-100 with the type embedding 2-4-8 or the descriptor's own,
  // sel 46/92, 120 or 40 of any type, no attention layers, se_e3_tebd in the strip form) with random weights
  // and the frames' statistics; se_e2_r's tables by LibTorch operations, the others' by the kernels (se_e3,
  // se_e3_tebd: the three-body kernel): se_a_ebd_v2's, se_atten_v2's and se_e3_tebd's tables are G's, times
  // 1 + G_t of the pair's types (se_atten_v2, se_e3_tebd: G_t times the smooth gates).
  const std::string descriptor =
      GENERATE(as<std::string>{}, "se_e2_r", "se_e3", "se_a_ebd_v2", "se_atten_v2", "se_e3_tebd");
  INFO("descriptor " << descriptor);
  const auto water = Dataset::load({require_shared_dataset("water/data_3")}, {"O", "H"});
  auto doc = water_reference_model();
  doc["descriptor"]["type"] = descriptor;
  if (descriptor == "se_a_ebd_v2") {
    doc["type_embedding"] = {{"neuron", {2, 4, 8}}};
  } else if (descriptor == "se_atten_v2") {
    doc["descriptor"]["sel"] = 120;
    doc["descriptor"]["attn_layer"] = 0;
    doc["descriptor"].erase("type_one_side");
  } else if (descriptor == "se_e3_tebd") {
    // DeePMD-kit's se_e3_tebd example (sel 40, rcut 4, nets 2-4-8) in the strip form it compresses
    doc["descriptor"] = {{"type", "se_e3_tebd"}, {"sel", 40},           {"rcut_smth", 0.5},
                         {"rcut", 4.0},          {"neuron", {2, 4, 8}}, {"tebd_input_mode", "strip"}};
  } else {
    doc["descriptor"]["neuron"] =
        descriptor == "se_e3" ? std::vector<int>{2, 4, 8} : std::vector<int>{5, 10, 20};
    doc["descriptor"].erase("axis_neuron");
  }
  if (descriptor == "se_e3") doc["descriptor"].erase("type_one_side");
  check_default_tables(ModelConfig::from_json(doc), water.systems.at(0), 1e-10);
  // Forces of the compressed model against finite differences of its own energy, on a small cell.
  const auto small_form = descriptor == "se_atten_v2"  ? "se_atten_v2_0"
                          : descriptor == "se_e3_tebd" ? "se_e3_tebd_strip"
                                                       : descriptor;
  auto small = small_model(false, true, torch::kFloat64, small_form);
  TrainingRange r(2);
  r.add({0.9, 1.0, 1.0, 1.1}, 1);
  small->set_training_range(r);
  small->compress(with_step(0.01));
  const auto c = triclinic_cell();
  const auto f = run(small, c).force[0];
  const auto fd = fd_forces(small, c);
  REQUIRE(max_abs(fd) > 1e-4);
  CHECK(max_abs(f - fd) < 1e-6 * max_abs(fd));
}

TEST_CASE("the kernel evaluates se_atten's strip tables as LibTorch operations do, with and without gates",
          "[model][compress]") {
  // se_atten without attention layers over 40 slots of any type (the cell leaves some empty; the shifted
  // statistics make empty slots count), the smooth gates on (G + w G G_t: the kernel's gated tables) and off
  // (G (1 + G_t)), type_one_side on and off: the kernel against the same tables evaluated by LibTorch
  // operations (set_table_kernel(false), which the test above checks against the nets), and its forces and
  // virial against finite differences of its own energy.
  const bool smooth = GENERATE(true, false);
  const bool one_side = GENERATE(false, true);
  const bool f32 = GENERATE(false, true);
  INFO("smooth " << smooth << ", type_one_side " << one_side << ", float32 " << f32);
  auto mc = small_config(one_side, true, "se_atten_v2_0");
  mc.attention.smooth = smooth;
  mc.precision = f32 ? torch::kFloat32 : torch::kFloat64;
  auto model = small_model_of(mc);
  TrainingRange r(2);
  r.add({0.9, 1.0, 1.0, 1.1}, 1);
  model->set_training_range(r);
  model->compress(with_step(0.01));
  const auto c = triclinic_cell();
  const auto in = make_inputs(c, model->config());
  REQUIRE(in.nlist.lt(0).any().item<bool>());
  const auto options = deepkf::EvalOptions::with_atom_virial();
  const auto kernel = model->evaluate(in.coord, in.atype, in.nlist, in.shift, options);
  model->set_table_kernel(false);
  const auto ops = model->evaluate(in.coord, in.atype, in.nlist, in.shift, options);
  model->set_table_kernel(true);
  const double tol = f32 ? 1e-5 : 1e-12;
  const auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
    return max_abs(a.to(torch::kFloat64) - b.to(torch::kFloat64)) / max_abs(b.to(torch::kFloat64));
  };
  CHECK(rel(kernel.atom_energy, ops.atom_energy) < tol);
  CHECK(rel(kernel.force, ops.force) < tol);
  CHECK(rel(kernel.virial, ops.virial) < tol);
  CHECK(rel(kernel.atom_virial, ops.atom_virial) < tol);
  if (f32) return;
  const auto fd = fd_forces(model, c);
  REQUIRE(max_abs(fd) > 1e-4);
  CHECK(max_abs(kernel.force[0] - fd) < 1e-6 * max_abs(fd));
  const auto strain = -fd_strain_derivative(model, c).t();
  CHECK(max_abs(kernel.virial[0].view({3, 3}) - strain) < 1e-6 * max_abs(strain));
}

TEST_CASE("compressed forces and virials are the exact derivatives of the compressed energy",
          "[model][compress]") {
  SECTION("synthetic cells, both net layouts") {
    for (bool one_side : {true, false}) {
      auto model = compressed_small(one_side, !one_side);
      const auto c = triclinic_cell();
      const auto f = run(model, c).force[0];
      const auto ref = fd_forces(model, c);
      INFO("type_one_side " << one_side
                            << ": max |F - F_fd| / max |F_fd| = " << max_abs(f - ref) / max_abs(ref));
      CHECK(max_abs(f - ref) < 1e-6 * max_abs(ref));
    }
  }
  SECTION("a real water frame and a real silicon frame (the project's CP2K data)") {
    const std::string data = DEEPKF_SOURCE_DIR "/data/";
    auto water = load_model(kTestModels + "/water_small.pt").model;
    water->compress(with_step(0.01));
    const auto w = Dataset::load({data + "water_cp2k.h5"}, {"O", "H"});
    const auto wc = frame_config(w.systems[0], 2);
    const auto fw = run(water, wc).force[0];
    CHECK(max_abs(fw - fd_forces(water, wc)) < 1e-6 * max_abs(fw));

    auto model = load_model(kTestModels + "/si_small.pt").model;
    model->compress(with_step(0.01));
    const auto si = Dataset::load({data + "si_cp2k.h5#Si16"}, {"Si"});
    const auto sc = frame_config(si.systems.at(0), 1);
    const auto fs = run(model, sc).force[0];
    CHECK(max_abs(fs - fd_forces(model, sc)) < 1e-6 * max_abs(fs));
  }
  SECTION("virial against a finite-difference strain of the cell, and per-atom virials that sum to it") {
    auto model = compressed_small(false, true);
    const auto c = triclinic_cell();
    const auto in = make_inputs(c, model->config());
    const auto out =
        model->evaluate(in.coord, in.atype, in.nlist, in.shift, deepkf::EvalOptions::with_atom_virial());
    const auto de = fd_strain_derivative(model, c);
    const auto ref = -de.t();
    CHECK(max_abs(out.virial[0].view({3, 3}) - ref) < 1e-6 * max_abs(ref));
    CHECK(max_abs(out.atom_virial[0].sum(0) - out.virial[0]) < 1e-12 * max_abs(ref));
  }
}

TEST_CASE("compressed models are invariant under translation, rotation and permutation",
          "[model][compress]") {
  auto model = compressed_small(false, true);
  const auto c = triclinic_cell();
  const auto base = run(model, c);
  const double e0 = base.energy.item<double>();
  const auto f0 = base.force[0];
  Config moved = c;
  for (std::size_t i = 0; i < moved.coord.size(); ++i) moved.coord[i] += (i % 3 == 0 ? 1.37 : -2.11);
  const auto t = run(model, moved);
  CHECK(t.energy.item<double>() == Approx(e0).epsilon(1e-12));
  CHECK(max_abs(t.force[0] - f0) < 1e-10 * max_abs(f0));
  // rotation by 0.7 rad about z of atoms and cell: x' = x Q
  const double cs = std::cos(0.7), sn = std::sin(0.7);
  const auto rot = torch::tensor({cs, sn, 0.0, -sn, cs, 0.0, 0.0, 0.0, 1.0}, torch::kFloat64).view({3, 3});
  Config turned = c;
  const auto x = torch::tensor(c.coord, torch::kFloat64).view({-1, 3}).matmul(rot).contiguous();
  const auto hbox = torch::tensor(c.box, torch::kFloat64).view({3, 3}).matmul(rot).contiguous();
  turned.coord.assign(x.data_ptr<double>(), x.data_ptr<double>() + x.numel());
  turned.box.assign(hbox.data_ptr<double>(), hbox.data_ptr<double>() + 9);
  const auto r = run(model, turned);
  CHECK(r.energy.item<double>() == Approx(e0).epsilon(1e-12));
  CHECK(max_abs(r.force[0] - f0.matmul(rot)) < 1e-10 * max_abs(f0));
  // swap the first two atoms of type 0
  std::vector<std::int64_t> of_type;
  for (std::int64_t i = 0; i < c.natoms(); ++i)
    if (c.types[i] == 0) of_type.push_back(i);
  Config swapped = c;
  for (int d = 0; d < 3; ++d) std::swap(swapped.coord[3 * of_type[0] + d], swapped.coord[3 * of_type[1] + d]);
  const auto p = run(model, swapped);
  CHECK(p.energy.item<double>() == Approx(e0).epsilon(1e-12));
  CHECK(max_abs(p.force[0][of_type[0]] - f0[of_type[1]]) < 1e-10 * max_abs(f0));
}

TEST_CASE("a compressed float32 model agrees with the float64 model to float32 precision",
          "[model][compress]") {
  auto m32 = compressed_small(true, true, torch::kFloat32);
  auto m64 = small_model(true, true, torch::kFloat64);
  const auto c = triclinic_cell();
  const auto o32 = run(m32, c);
  const auto o64 = run(m64, c);
  REQUIRE(o32.force.scalar_type() == torch::kFloat32);
  CHECK(o32.energy.item<double>() == Approx(o64.energy.item<double>()).epsilon(1e-5));
  CHECK(max_abs(o32.force.to(torch::kFloat64) - o64.force) < 1e-4 * max_abs(o64.force));
  CHECK(max_abs(o32.virial.to(torch::kFloat64) - o64.virial) < 1e-4 * max_abs(o64.virial));
}

TEST_CASE("the kernel gives the same bits on 1 and 2 threads", "[model][compress]") {
  auto model = compressed_small(true, true);
  const auto c = triclinic_cell();
  const auto in = make_inputs(c, model->config());
  const int before = at::get_num_threads();
  std::vector<torch::Tensor> results;
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    TabulatedDescriptor d(model->table(), model->config(), model->davg(), model->dstd(), in.coord, in.atype,
                          in.nlist, in.shift);
    const auto T = d.forward();
    const auto f = d.backward(torch::sin(torch::arange(T.numel(), torch::kFloat64)).view_as(T), true);
    results.insert(results.end(), {T, f.force, f.virial, f.atom_virial});
  }
  at::set_num_threads(before);
  for (std::size_t k = 0; k < 4; ++k) CHECK(torch::equal(results[k], results[k + 4]));
}

TEST_CASE("neighbours beyond the table are counted and stay finite and consistent", "[model][compress]") {
  auto model = small_model(false, true);
  TrainingRange r(2);
  r.add({0.9, 1.0, 1.0, 1.1}, 1);
  model->set_training_range(r);
  TableSettings s = with_step(0.01);
  s.extrapolate = 2;  // the tables end at s = 2 s(0.9 A): about 0.45 A
  model->compress(s);
  Config c;
  c.coord = {0, 0, 0, 0.3, 0.1, 0, 1.6, -0.2, 0.4};
  c.types = {0, 0, 1};
  const auto out = run(model, c);
  CHECK(out.beyond_table == 2);  // 0-1 and 1-0
  CHECK(torch::isfinite(out.force).all().item<bool>());
  const auto ref = fd_forces(model, c);
  CHECK(max_abs(out.force[0] - ref) < 1e-6 * max_abs(ref));
  Config far = c;
  far.coord[3] = 1.2;
  CHECK(run(model, far).beyond_table == 0);
}

TEST_CASE("a compressed model refuses training and a second compression", "[model][compress]") {
  auto model = compressed_small(true, true);
  const auto in = make_inputs(triclinic_cell(), model->config());
  CHECK_THROWS_WITH(model->evaluate(in.coord, in.atype, in.nlist, in.shift, deepkf::EvalOptions::training()),
                    Catch::Contains("compressed") && Catch::Contains("uncompressed"));
  CHECK_THROWS_AS(model->atomic_energy(in.coord, in.atype, in.nlist, in.shift), ModelError);
  CHECK_THROWS_WITH(model->compress(with_step(0.01)), Catch::Contains("already compressed"));
}
