#pragma once
// What the compressed models' CPU kernels (TabulatedKernel.cpp, TabulatedThreeBodyKernel.cpp) read per
// neighbour slot: the pair vector, the switch and s(r), the normalised environment row, and the table's
// polynomial and its derivative by Horner's rule (docs/compression.md). Torch-free; for those two files only
// (it defines the macros that build their range functions).
#include <cmath>
#include <cstdint>

#include "src/model/SwitchFunction.hpp"
#include "src/model/TabulatedKernel.hpp"

// The range functions are built for the baseline and for AVX2 (x86-64-v3), and the loader picks the one the
// processor runs; the loops over the M channels vectorise under `omp simd` (the files are built with
// -fopenmp-simd).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DEEPKF_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DEEPKF_CLONES
#endif
#define DEEPKF_INLINE [[gnu::always_inline]] inline

namespace deepkf::tabulated::slot {

// One neighbour slot of a centre: its pair vector and radial factor, and its normalised environment row.
template <typename Real>
struct Slot {
  Real r[3] = {0, 0, 0};     // r_ij (A)
  Real dist = 0;             // |r_ij|
  Real w = 0, dw = 0;        // the switch w(|r_ij|) and dw/dr
  Real s = 0, ds = 0;        // s(|r_ij|) = w / |r_ij| and ds/dr
  Real R[4] = {0, 0, 0, 0};  // R^ = (R~ - davg) / dstd; x = R^_0
  int type = 0;              // the neighbour type whose tables the slot reads
  bool inside = false;       // a neighbour within rcut: the only slots with a gradient
};

// r_ij = x_j + shift_ij - x_i of slot `slot` of centre `atom`, whose neighbour is j >= 0.
template <typename Real>
DEEPKF_INLINE void pair_vector(const Problem<Real>& p, std::int64_t atom, std::int64_t slot, std::int64_t j,
                               Real* r) {
  const std::int64_t frame = atom / p.nloc, i = atom % p.nloc;
  const Real* xi = p.coord + (frame * p.nall + i) * 3;
  const Real* xj = p.coord + (frame * p.nall + j) * 3;
  const Real* sh = p.shift != nullptr ? p.shift + (atom * p.nnei + slot) * 3 : nullptr;
  for (int d = 0; d < 3; ++d) r[d] = xj[d] - xi[d] + (sh != nullptr ? sh[d] : Real(0));
}

// The type of centre `atom` (frame-major index in [0, nframes nloc)).
template <typename Real>
DEEPKF_INLINE int centre_type(const Problem<Real>& p, std::int64_t atom) {
  return static_cast<int>(p.atype[(atom / p.nloc) * p.nall + atom % p.nloc]);
}

// R~ = (s, s r / |r|) for a neighbour within rcut, 0 for an empty slot or one at or beyond rcut;
// R^ = (R~ - davg) / dstd with the centre type's statistics of this slot.
template <typename Real>
DEEPKF_INLINE Slot<Real> make_slot(const Problem<Real>& p, std::int64_t atom, std::int64_t slot, int centre) {
  Slot<Real> out;
  const std::int64_t j = p.nlist[atom * p.nnei + slot];
  if (!p.mixed_types) {
    out.type = p.slot_type[static_cast<std::size_t>(slot)];
  } else {
    out.type = j >= 0 ? static_cast<int>(p.atype[(atom / p.nloc) * p.nall + j]) : p.ntypes;
  }
  Real env[4] = {0, 0, 0, 0};
  if (j >= 0) {
    pair_vector(p, atom, slot, j, out.r);
    out.dist = std::sqrt(out.r[0] * out.r[0] + out.r[1] * out.r[1] + out.r[2] * out.r[2]);
    if (out.dist < p.rcut) {
      out.inside = true;
      out.w = switch_value(out.dist, static_cast<Real>(p.rcut), static_cast<Real>(p.rcut_smth), out.dw);
      out.s = inverse_of_switch(out.dist, out.w, out.dw, out.ds);
      const Real s_over_r = out.s / out.dist;
      env[0] = out.s;
      for (int d = 0; d < 3; ++d) env[1 + d] = out.r[d] * s_over_r;
    }
  }
  const std::int64_t row = (static_cast<std::int64_t>(centre) * p.nnei + slot) * 4;
  for (int a = 0; a < 4; ++a) out.R[a] = (env[a] - p.davg[row + a]) / p.dstd[row + a];
  return out;
}

// dE/dr_ij of a slot within rcut from q0 = dE/dR~_0, q = dE/dR~_1..3 and a = dE/dw (through gates on the
// switch): R~ = (s, s u) with u = r / |r|, so
//   dE/dr = [q0 s' + (q.u)(s' - s/r) + a w'] u + (s/r) q
template <typename Real>
DEEPKF_INLINE void pair_gradient(const Slot<Real>& sl, Real q0, const Real* q, Real a, Real* g) {
  const Real inv_r = Real(1) / sl.dist;
  const Real u[3] = {sl.r[0] * inv_r, sl.r[1] * inv_r, sl.r[2] * inv_r};
  const Real qu = q[0] * u[0] + q[1] * u[1] + q[2] * u[2];
  const Real s_over_r = sl.s * inv_r;
  const Real radial = q0 * sl.ds + qu * (sl.ds - s_over_r) + a * sl.dw;
  for (int d = 0; d < 3; ++d) g[d] = radial * u[d] + s_over_r * q[d];
}

// One pair's share of its centre's force and virial: F_i += g_ij (F_i = -dE/dx_i = sum_j dE/dr_ij) and
// W_ab -= g_a r_b.
template <typename Real>
DEEPKF_INLINE void add_pair(const Real* g, const Real* r, Real* force, Real* virial) {
  for (int d = 0; d < 3; ++d) force[d] += g[d];
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) virial[3 * a + b] -= g[a] * r[b];
}

// p(t) = sum_k c_k t^k and p'(t) of channel m, Horner's rule; c holds the 6 x M coefficients of one interval.
template <typename Real>
DEEPKF_INLINE Real poly(const Real* c, std::int64_t M, std::int64_t m, Real t) {
  return ((((c[5 * M + m] * t + c[4 * M + m]) * t + c[3 * M + m]) * t + c[2 * M + m]) * t + c[M + m]) * t +
         c[m];
}

template <typename Real>
DEEPKF_INLINE Real dpoly(const Real* c, std::int64_t M, std::int64_t m, Real t) {
  return (((Real(5) * c[5 * M + m] * t + Real(4) * c[4 * M + m]) * t + Real(3) * c[3 * M + m]) * t +
          Real(2) * c[2 * M + m]) *
             t +
         c[M + m];
}

// Where x falls in `table`: the coefficients of its interval, t = x - x_i and the distance e beyond the
// table's ends (0 inside), with which G = p(t) + e p'(t) (the tangent line beyond the ends) and G' = p'(t).
template <typename Real>
struct Lookup {
  const Real* coef = nullptr;
  Real t = 0, e = 0;
  Position pos;
};

template <typename Real>
DEEPKF_INLINE Lookup<Real> lookup(const Table<Real>& table, std::int64_t M, double x) {
  Lookup<Real> out;
  out.pos = locate(table.grid, x);
  out.coef = table.coef + out.pos.interval * 6 * M;
  out.t = static_cast<Real>(out.pos.t);
  out.e = static_cast<Real>(out.pos.beyond);
  return out;
}

}  // namespace deepkf::tabulated::slot
