#pragma once
// A small silicon se_e2_a model for tests that need a real model but not a trained one.
#include "src/model/DeepPot.hpp"

namespace deepkf::test {

// rcut 4, rcut_smth 1, embedding [4, 8], axis 2, fitting [8, 8], seed 3; `sel` neighbour slots.
inline ModelConfig small_silicon_config(int sel) {
  ModelConfig mc;
  mc.type_map = {"Si"};
  mc.rcut = 4.0;
  mc.rcut_smth = 1.0;
  mc.sel = {sel};
  mc.embedding_neuron = {4, 8};
  mc.axis_neuron = 2;
  mc.fitting_neuron = {8, 8};
  mc.seed = 3;
  mc.validate();
  return mc;
}

}  // namespace deepkf::test
