#pragma once
// The water reference model of the benchmarks and its arithmetic cost, shared by bench_model and
// bench_lammps so that both report FLOP/s against the same count.
//
// FLOPs per atom of one energy evaluation (multiply-add = 2 FLOPs), N_c = sum(sel), M = last embedding
// width, M< = axis_neuron, e_k / f_k the embedding / fitting layer widths (e_0 = 1, f_0 = M M<, f_last = 1):
//   F_E = N_c * 2 sum_k e_k e_{k+1}        (embedding net on every slot)
//       + 2 * 4 * M * N_c                  (T = R^T G)
//       + 2 * 4 * M * M<                   (D = T^T T<)
//       + 2 sum_k f_k f_{k+1}              (fitting net)
// Forces by autograd with respect to the pair vectors only (no weight gradients) cost one more pass of the
// same matrix products: F_EF = 2 F_E.
#include "src/model/ModelConfig.hpp"

namespace deepkf::bench {

// DeePMD-kit's water example settings: se_e2_a, rcut 6, sel 46/92, embedding 25/50/100 type_one_side,
// axis 16, fitting 240/240/240 (float64 unless changed).
inline ModelConfig water_reference_config() {
  ModelConfig mc;
  mc.type_map = {"O", "H"};
  mc.rcut = 6.0;
  mc.rcut_smth = 0.5;
  mc.sel = {46, 92};
  mc.embedding_neuron = {25, 50, 100};
  mc.axis_neuron = 16;
  mc.type_one_side = true;
  mc.fitting_neuron = {240, 240, 240};
  return mc;
}

// F_E above.
inline double energy_flops_per_atom(const ModelConfig& c) {
  const double nc = static_cast<double>(c.nnei());
  const double m = static_cast<double>(c.embedding_width());
  double emb = 0, prev = 1;
  for (int w : c.embedding_neuron) {
    emb += 2 * prev * w;
    prev = w;
  }
  double fit = 0;
  prev = static_cast<double>(c.descriptor_dim());
  for (int w : c.fitting_neuron) {
    fit += 2 * prev * w;
    prev = w;
  }
  fit += 2 * prev;
  return nc * emb + 2 * 4 * m * nc + 2 * 4 * m * c.axis_neuron + fit;
}

}  // namespace deepkf::bench
