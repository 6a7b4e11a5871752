#pragma once
// The CPU kernel of compressed three-body models, se_e3 and se_e3_tebd in the strip form
// (docs/compression.md, "The three-body kernel"). Torch-free: raw pointers, no threads; the caller
// (TabulatedDescriptor) runs ranges of centre atoms on its threads.
//
// With r^_j = (R^_j1, R^_j2, R^_j3) the normalised direction columns of slot j's environment row and
// g_jk = r^_j . r^_k, the kernel computes the descriptor of each centre i directly (docs/deep-potential.md):
//   se_e3:       D_m = sum_{a <= b} (1 / (sel_a sel_b)) sum_{j in a, k in b} g_jk G_ab,m(g_jk)
//   se_e3_tebd:  D_m = (1 / N^2) sum_{j, k} g_jk G_m(g_jk) (1 + G_t,m([tebd_j, tebd_k]) w_j w_k)
// (without `smooth`, the gates w_j w_k are 1). g is symmetric, so each unordered pair j <= k is visited
// once: a pair j < k of se_e3_tebd, or of one type of se_e3 (whose sum over a = b runs over both orders),
// counts twice, and se_e3_tebd's G_t enters as H_ab = (G_t([tebd_a, tebd_b]) + G_t([tebd_b, tebd_a])) / 2.
// Slots with r^ = 0 (padding, neighbours at or beyond rcut) have g = 0 with every partner and add nothing,
// value or derivative: they are skipped. Given dE/dD, the backward pass forms
//   dE/dg_jk = c_jk sum_m dE/dD_m f_m (G_m + g G'_m),  f = 1 + H w_j w_k (se_e3: 1), c_jk the pair's
//              weight (pair_scale below),
//   dE/dr^_j += dE/dg_jk r^_k,  dE/dr^_k += dE/dg_jk r^_j,
//   dE/dw_j  += c_jk g sum_m dE/dD_m G_m H_m w_k (and the same for k; with the gates only)
// and chains them through r^ = (R~_1..3 - davg) / dstd and R~ = s(r) r / |r| to g_ij = dE/dr_ij.
#include <cstdint>
#include <vector>

#include "src/model/TabulatedKernel.hpp"

namespace deepkf::tabulated {

template <typename Real>
struct ThreeBodyProblem {
  // The atoms, the neighbour list, the statistics, the cutoffs and the tables: se_e3's one per net
  // (ModelConfig::embedding_index order), se_e3_tebd's one (a mixed list: atoms.mixed_types). Its
  // type_one_side and gated are not read.
  Problem<Real> atoms;
  // The per-type-pair arrays below are types x types, indexed by the pair of slot types (a, b): types =
  // ntypes (se_e3) or ntypes + 1 (se_e3_tebd: the type ntypes of an empty slot last). Both symmetric.
  int types = 0;
  std::vector<int> pair_table;  // the table of (a, b)
  // The weight of a pair j < k in D: se_e3 1 / (sel_a sel_b) for a != b and 2 / sel_a^2 for a = b,
  // se_e3_tebd 2 / N^2; a pair j = k has half of it.
  std::vector<Real> pair_scale;
  // se_e3_tebd: H_ab (types x types x M, symmetric in a, b); null for se_e3.
  const Real* factor = nullptr;
  bool gated = false;  // se_e3_tebd with `smooth`: 1 + H w_j w_k, else 1 + H

  int pair(int a, int b) const { return a * types + b; }
};

// Centres [begin, end) (frame-major indices in [0, nframes nloc)): D of each into D (nframes nloc x M).
// Returns the number of table lookups beyond the tables' ends or more than a fine step before their start,
// counted as the LibTorch path counts them (EmbeddingTableImpl::values): once per pair j <= k for se_e3
// (whose nets see those pairs), once per ordered pair for se_e3_tebd (whose net sees all N^2).
std::int64_t three_body_forward(const ThreeBodyProblem<double>& p, std::int64_t begin, std::int64_t end,
                                double* D);
std::int64_t three_body_forward(const ThreeBodyProblem<float>& p, std::int64_t begin, std::int64_t end,
                                float* D);

// The backward pass of centres [begin, end) for dE/dD (nframes nloc x M), with tabulated::backward's
// outputs: g_ij = dE/dr_ij into pair_grad (nframes nloc x nnei x 3; zero for empty slots and slots at or
// beyond rcut), F_i = sum_j g_ij into centre_force (nframes nloc x 3), W_ab = -sum_j g_ij,a r_ij,b into
// centre_virial (nframes nloc x 9). tabulated::scatter_pairs(p.atoms, ...) adds the reactions.
void three_body_backward(const ThreeBodyProblem<double>& p, std::int64_t begin, std::int64_t end,
                         const double* dD, double* pair_grad, double* centre_force, double* centre_virial);
void three_body_backward(const ThreeBodyProblem<float>& p, std::int64_t begin, std::int64_t end,
                         const float* dD, float* pair_grad, float* centre_force, float* centre_virial);

}  // namespace deepkf::tabulated
