#pragma once
// Helpers of the compressed-model tests: small models compressed with a fixed training range, and the
// comparison of the tables' CPU kernel with the same tables evaluated by LibTorch operations.
#include <torch/torch.h>

#include <string>

#include "tests/model/ModelTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TensorCompare.hpp"

namespace deepkf::test {

// Compresses `model` at step 0.01 over the training range 0.9 A (type pair 0-0) to 1.1 A (1-1), its tables
// reaching `extrapolate` times the largest s.
inline void compress_for_test(DeepPot& model, double extrapolate = 5.0) {
  TrainingRange r(2);
  r.add({0.9, 1.0, 1.0, 1.1}, 1);
  model->set_training_range(r);
  TableSettings s;
  s.step = 0.01;
  s.extrapolate = extrapolate;
  model->compress(s);
}

inline DeepPot compressed(bool type_one_side, c10::ScalarType precision, double extrapolate = 5.0,
                          const std::string& descriptor = "se_e2_a") {
  auto model = small_model(type_one_side, true, precision, descriptor);
  compress_for_test(model, extrapolate);
  return model;
}

// The model's outputs with the kernel and with LibTorch operations, compared output by output (relative to
// the largest of each), and their counts of lookups beyond the tables.
inline void check_paths_agree(DeepPot& model, const Config& c, double tol) {
  const auto in = make_inputs(c, model->config());
  model->set_table_kernel(true);
  const auto kernel =
      model->evaluate(in.coord, in.atype, in.nlist, in.shift, deepkf::EvalOptions::with_atom_virial());
  model->set_table_kernel(false);
  const auto ops =
      model->evaluate(in.coord, in.atype, in.nlist, in.shift, deepkf::EvalOptions::with_atom_virial());
  model->set_table_kernel(true);
  CHECK(ops.beyond_table == kernel.beyond_table);
  CHECK(relative_difference(ops.energy, kernel.energy) < tol);
  CHECK(relative_difference(ops.atom_energy, kernel.atom_energy) < tol);
  CHECK(relative_difference(ops.force, kernel.force) < tol);
  CHECK(relative_difference(ops.virial, kernel.virial) < tol);
  CHECK(relative_difference(ops.atom_virial, kernel.atom_virial) < tol);
}

}  // namespace deepkf::test
