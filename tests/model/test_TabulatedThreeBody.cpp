// The three-body kernel of compressed se_e3 and se_e3_tebd (strip) models (TabulatedThreeBodyKernel):
// against the same tables evaluated by LibTorch operations (energies, forces, virials, per-atom virials and
// the count of lookups beyond the tables), against the uncompressed model, forces and virial against finite
// differences of its own energy, in the ghost layout LAMMPS passes, and independent of the thread count.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <string>

#include "src/model/TabulatedDescriptor.hpp"
#include "tests/model/CompressedTestSupport.hpp"
#include "tests/model/ModelChecks.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

// A small se_e3 (two types, sel 20/20, rcut 3, embedding 4-8-8-16) or se_e3_tebd model in the strip form
// (40 slots of any type, embedding 2-4-8, type vectors of 4), with or without the smooth gates.
ModelConfig three_body_config(const std::string& form, c10::ScalarType precision) {
  auto mc = small_config(false, true, form == "se_e3" ? "se_e3" : "se_e3_tebd_strip");
  mc.attention.smooth = form != "se_e3_tebd_strip_no_gates";
  mc.precision = precision;
  return mc;
}

DeepPot compressed_three_body(const std::string& form, c10::ScalarType precision, double extrapolate = 5.0) {
  auto model = small_model_of(three_body_config(form, precision));
  compress_for_test(model, extrapolate);
  return model;
}

// 64 atoms of two types in a triclinic cell: about 20 neighbours within rcut, so that some slots are empty.
Config dense_cell() { return jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 4, 2, 11); }

}  // namespace

TEST_CASE("the three-body kernel equals the tables by LibTorch operations in float64 and float32",
          "[model][compress]") {
  const std::string form =
      GENERATE(as<std::string>{}, "se_e3", "se_e3_tebd_strip", "se_e3_tebd_strip_no_gates");
  INFO("form " << form);
  const auto c = dense_cell();
  auto m64 = compressed_three_body(form, torch::kFloat64);
  REQUIRE(make_inputs(c, m64->config()).nlist.lt(0).any().item<bool>());
  check_paths_agree(m64, c, 1e-12);
  auto m32 = compressed_three_body(form, torch::kFloat32);
  check_paths_agree(m32, c, 2e-5);
}

TEST_CASE("the three-body kernel agrees with the uncompressed model within the tables' error",
          "[model][compress]") {
  // At the step 0.01 (docs/compression.md, "Error"; measured here: energies 2e-15, forces 4e-13, virials
  // 3e-14 of the largest).
  const std::string form =
      GENERATE(as<std::string>{}, "se_e3", "se_e3_tebd_strip", "se_e3_tebd_strip_no_gates");
  INFO("form " << form);
  const auto c = dense_cell();
  auto plain = small_model_of(three_body_config(form, torch::kFloat64));
  auto model = compressed_three_body(form, torch::kFloat64);
  const auto in = make_inputs(c, model->config());
  const auto options = deepkf::EvalOptions::with_atom_virial();
  const auto ref = plain->evaluate(in.coord, in.atype, in.nlist, in.shift, options);
  const auto out = model->evaluate(in.coord, in.atype, in.nlist, in.shift, options);
  CHECK(out.beyond_table == 0);
  CHECK(relative_difference(out.atom_energy, ref.atom_energy) < 1e-12);
  CHECK(relative_difference(out.force, ref.force) < 1e-10);
  CHECK(relative_difference(out.virial, ref.virial) < 1e-10);
  CHECK(relative_difference(out.atom_virial, ref.atom_virial) < 1e-10);
}

TEST_CASE("the three-body kernel's forces and virial are the derivatives of its energy",
          "[model][compress]") {
  const std::string form =
      GENERATE(as<std::string>{}, "se_e3", "se_e3_tebd_strip", "se_e3_tebd_strip_no_gates");
  INFO("form " << form);
  auto model = compressed_three_body(form, torch::kFloat64);
  const auto c = jittered_cell({7.2, 0, 0, 1.1, 6.9, 0, -0.8, 0.9, 7.1}, 3, 2, 11);
  const auto out = run(model, c);
  const auto fd = fd_forces(model, c);
  REQUIRE(fd.abs().max().item<double>() > 1e-4);
  // h = 1e-5 A: the differences' own error is ~1.5e-8 for se_e3 (the uncompressed model's forces differ from
  // them as much), 2e-10 for se_e3_tebd
  INFO("forces: " << relative_difference(out.force[0], fd));
  CHECK(relative_difference(out.force[0], fd) < 5e-8);
  const auto strain = -fd_strain_derivative(model, c).t();
  INFO("virial: " << relative_difference(out.virial[0].view({3, 3}), strain));
  CHECK(relative_difference(out.virial[0].view({3, 3}), strain) < 1e-8);
}

TEST_CASE("the three-body kernel gives the periodic results in the ghost layout LAMMPS passes",
          "[model][compress]") {
  const std::string form = GENERATE(as<std::string>{}, "se_e3", "se_e3_tebd_strip");
  INFO("form " << form);
  auto model = compressed_three_body(form, torch::kFloat64);
  check_ghost_layout(model, dense_cell());
}

TEST_CASE("the three-body kernel counts lookups beyond the tables as the LibTorch path does",
          "[model][compress]") {
  // Tables reaching twice the largest s: neighbours at 0.3 A give g far beyond the end (two on one side)
  // and far before the start (two on opposite sides); the kernel evaluates the tangent lines there.
  const std::string form = GENERATE(as<std::string>{}, "se_e3", "se_e3_tebd_strip");
  INFO("form " << form);
  auto model = compressed_three_body(form, torch::kFloat64, 2.0);
  Config c;
  c.coord = {0, 0, 0, 0.3, 0.1, 0, -0.3, 0.05, 0.02, 0.25, 0.2, 0.1, 1.6, -0.2, 0.4};
  c.types = {0, 0, 1, 1, 0};
  const auto out = run(model, c);
  CHECK(out.beyond_table > 0);
  CHECK(torch::isfinite(out.force).all().item<bool>());
  check_paths_agree(model, c, 1e-12);
  const auto fd = fd_forces(model, c);
  CHECK(relative_difference(out.force[0], fd) < 1e-7);
}

TEST_CASE("the three-body kernel gives the same bits on 1 and 2 threads", "[model][compress]") {
  const std::string form = GENERATE(as<std::string>{}, "se_e3", "se_e3_tebd_strip");
  INFO("form " << form);
  auto model = compressed_three_body(form, torch::kFloat64);
  const auto& mc = model->config();
  const auto in = make_inputs(dense_cell(), mc);
  // any symmetric factors will do for the kernel: (ntypes + 1) x (ntypes + 1) x M
  StripFactors strip;
  if (mc.three_body_tebd()) {
    const auto h = torch::rand({3, 3, mc.embedding_width()}, torch::kFloat64);
    strip.pair_factors = (h + h.transpose(0, 1)).contiguous();
  }
  const int before = at::get_num_threads();
  std::vector<torch::Tensor> results;
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    TabulatedDescriptor d(model->table(), mc, model->davg(), model->dstd(), in.coord, in.atype, in.nlist,
                          in.shift, strip);
    const auto D = d.forward();
    REQUIRE(D.sizes() == torch::IntArrayRef({in.nlist.size(1), mc.embedding_width()}));
    const auto f = d.backward(torch::sin(torch::arange(D.numel(), torch::kFloat64)).view_as(D), true);
    results.insert(results.end(), {D, f.force, f.virial, f.atom_virial});
  }
  at::set_num_threads(before);
  for (std::size_t k = 0; k < 4; ++k) CHECK(torch::equal(results[k], results[k + 4]));
}
