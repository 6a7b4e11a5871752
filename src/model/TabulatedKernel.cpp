#include "src/model/TabulatedKernel.hpp"

#include <algorithm>
#include <cmath>

#include "src/model/SwitchFunction.hpp"

// The loops over the M channels vectorise under `omp simd` (this file is built with -fopenmp-simd); the
// range functions are built for the baseline and for AVX2 (x86-64-v3), and the loader picks the one the
// processor runs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DEEPKF_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DEEPKF_CLONES
#endif
#define DEEPKF_INLINE [[gnu::always_inline]] inline

namespace deepkf::tabulated {

namespace {

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

// The coefficients of slot sl's interval in its table, and (Gated) in its table B.
template <typename Real>
struct Interval {
  Position pos;
  const Real* a = nullptr;
  const Real* b = nullptr;
};

template <typename Real, bool Gated>
DEEPKF_INLINE Interval<Real> interval(const Problem<Real>& p, int centre, const Slot<Real>& sl) {
  Interval<Real> out;
  const std::size_t k = p.table_index(centre, sl.type);
  const Table<Real>& table = p.tables[k];
  out.pos = locate(table.grid, static_cast<double>(sl.R[0]));
  const std::int64_t offset = out.pos.interval * 6 * p.width;
  out.a = table.coef + offset;
  if constexpr (Gated) out.b = p.gated[k].coef + offset;
  return out;
}

template <typename Real, bool Gated>
DEEPKF_INLINE std::int64_t forward_range(const Problem<Real>& p, std::int64_t begin, std::int64_t end,
                                         Real* T) {
  const std::int64_t M = p.width;
  const Real inv_n = Real(1) / static_cast<Real>(p.nnei);
  std::int64_t beyond_end = 0;
  for (std::int64_t atom = begin; atom < end; ++atom) {
    const int centre = static_cast<int>(p.atype[(atom / p.nloc) * p.nall + atom % p.nloc]);
    Real* T0 = T + atom * 4 * M;
    Real* T1 = T0 + M;
    Real* T2 = T1 + M;
    Real* T3 = T2 + M;
    std::fill(T0, T0 + 4 * M, Real(0));
    for (std::int64_t slot = 0; slot < p.nnei; ++slot) {
      const Slot<Real> sl = make_slot(p, atom, slot, centre);
      const auto at = interval<Real, Gated>(p, centre, sl);
      const Real* c = at.a;
      const Real* cb = at.b;
      const Real t = static_cast<Real>(at.pos.t);
      // beyond the table: its tangent line at the end it passed, G + G' e (e = 0 inside)
      if (at.pos.beyond > 0.0) ++beyond_end;
      const Real e = static_cast<Real>(at.pos.beyond);
      const Real R0 = sl.R[0], R1 = sl.R[1], R2 = sl.R[2], R3 = sl.R[3];
      const Real w = sl.w;
      if (at.pos.beyond == 0.0) {
        // T_am += R^_a G_m(x)
#pragma omp simd
        for (std::int64_t m = 0; m < M; ++m) {
          Real g = poly(c, M, m, t);
          if constexpr (Gated) g += w * poly(cb, M, m, t);
          T0[m] += R0 * g;
          T1[m] += R1 * g;
          T2[m] += R2 * g;
          T3[m] += R3 * g;
        }
      } else {
#pragma omp simd
        for (std::int64_t m = 0; m < M; ++m) {
          Real g = poly(c, M, m, t) + e * dpoly(c, M, m, t);
          if constexpr (Gated) g += w * (poly(cb, M, m, t) + e * dpoly(cb, M, m, t));
          T0[m] += R0 * g;
          T1[m] += R1 * g;
          T2[m] += R2 * g;
          T3[m] += R3 * g;
        }
      }
    }
    // T = (1/N_c) sum_j R^_j^T G_j
    for (std::int64_t k = 0; k < 4 * M; ++k) T0[k] *= inv_n;
  }
  return beyond_end;
}

template <typename Real, bool Gated>
DEEPKF_INLINE void backward_range(const Problem<Real>& p, std::int64_t begin, std::int64_t end,
                                  const Real* dT, Real* pair_grad, Real* centre_force, Real* centre_virial) {
  const std::int64_t M = p.width;
  const Real inv_n = Real(1) / static_cast<Real>(p.nnei);
  std::vector<Real> scaled(static_cast<std::size_t>(4 * M));
  Real* D0 = scaled.data();
  Real* D1 = D0 + M;
  Real* D2 = D1 + M;
  Real* D3 = D2 + M;
  for (std::int64_t atom = begin; atom < end; ++atom) {
    const int centre = static_cast<int>(p.atype[(atom / p.nloc) * p.nall + atom % p.nloc]);
    // dE/dT / N_c: T carries the 1/N_c
    for (std::int64_t k = 0; k < 4 * M; ++k) D0[k] = dT[atom * 4 * M + k] * inv_n;
    Real force[3] = {0, 0, 0};
    Real virial[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    Real* grads = pair_grad + atom * p.nnei * 3;
    for (std::int64_t slot = 0; slot < p.nnei; ++slot) {
      Real* g_out = grads + slot * 3;
      const Slot<Real> sl = make_slot(p, atom, slot, centre);
      if (!sl.inside) {
        g_out[0] = g_out[1] = g_out[2] = Real(0);
        continue;
      }
      const auto at = interval<Real, Gated>(p, centre, sl);
      const Real* c = at.a;
      const Real* cb = at.b;
      const Real t = static_cast<Real>(at.pos.t);
      const Real e = static_cast<Real>(at.pos.beyond);
      const Real R0 = sl.R[0], R1 = sl.R[1], R2 = sl.R[2], R3 = sl.R[3];
      const Real w = sl.w;
      // a_a = dE/dR^_a through T; ax = dE/dx through G's argument; aw = dE/dw through the gates
      Real a0 = 0, a1 = 0, a2 = 0, a3 = 0, ax = 0, aw = 0;
#pragma omp simd reduction(+ : a0, a1, a2, a3, ax, aw)
      for (std::int64_t m = 0; m < M; ++m) {
        Real dg = dpoly(c, M, m, t);
        Real g = poly(c, M, m, t) + e * dg;
        const Real rd = R0 * D0[m] + R1 * D1[m] + R2 * D2[m] + R3 * D3[m];
        if constexpr (Gated) {
          const Real dgb = dpoly(cb, M, m, t);
          const Real gb = poly(cb, M, m, t) + e * dgb;
          g += w * gb;
          dg += w * dgb;
          aw += rd * gb;
        }
        a0 += D0[m] * g;
        a1 += D1[m] * g;
        a2 += D2[m] * g;
        a3 += D3[m] * g;
        ax += rd * dg;
      }
      // dE/dR~_a = dE/dR^_a / dstd_a, with x = R^_0 adding dE/dx to column 0
      const Real* dstd = p.dstd + (static_cast<std::int64_t>(centre) * p.nnei + slot) * 4;
      const Real q0 = (a0 + ax) / dstd[0];
      const Real q[3] = {a1 / dstd[1], a2 / dstd[2], a3 / dstd[3]};
      // R~ = (s, s u), u = r / |r|:  g = [q0 s' + (q.u)(s' - s/r) + aw w'] u + (s/r) q
      const Real inv_r = Real(1) / sl.dist;
      const Real u[3] = {sl.r[0] * inv_r, sl.r[1] * inv_r, sl.r[2] * inv_r};
      const Real qu = q[0] * u[0] + q[1] * u[1] + q[2] * u[2];
      const Real s_over_r = sl.s * inv_r;
      Real radial = q0 * sl.ds + qu * (sl.ds - s_over_r);
      if constexpr (Gated) radial += aw * sl.dw;
      for (int d = 0; d < 3; ++d) {
        const Real g = radial * u[d] + s_over_r * q[d];
        g_out[d] = g;
        force[d] += g;  // F_i = -dE/dx_i = sum_j dE/dr_ij
      }
      // W_ab = -sum_j g_a r_b
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) virial[3 * a + b] -= g_out[a] * sl.r[b];
    }
    std::copy(force, force + 3, centre_force + atom * 3);
    std::copy(virial, virial + 9, centre_virial + atom * 9);
  }
}

template <typename Real>
DEEPKF_INLINE std::int64_t forward_any(const Problem<Real>& p, std::int64_t begin, std::int64_t end,
                                       Real* T) {
  return p.gated.empty() ? forward_range<Real, false>(p, begin, end, T)
                         : forward_range<Real, true>(p, begin, end, T);
}

template <typename Real>
DEEPKF_INLINE void backward_any(const Problem<Real>& p, std::int64_t begin, std::int64_t end, const Real* dT,
                                Real* pair_grad, Real* centre_force, Real* centre_virial) {
  if (p.gated.empty()) {
    backward_range<Real, false>(p, begin, end, dT, pair_grad, centre_force, centre_virial);
  } else {
    backward_range<Real, true>(p, begin, end, dT, pair_grad, centre_force, centre_virial);
  }
}

DEEPKF_CLONES std::int64_t forward_f64(const Problem<double>& p, std::int64_t begin, std::int64_t end,
                                       double* T) {
  return forward_any(p, begin, end, T);
}

DEEPKF_CLONES std::int64_t forward_f32(const Problem<float>& p, std::int64_t begin, std::int64_t end,
                                       float* T) {
  return forward_any(p, begin, end, T);
}

DEEPKF_CLONES void backward_f64(const Problem<double>& p, std::int64_t begin, std::int64_t end,
                                const double* dT, double* pair_grad, double* centre_force,
                                double* centre_virial) {
  backward_any(p, begin, end, dT, pair_grad, centre_force, centre_virial);
}

DEEPKF_CLONES void backward_f32(const Problem<float>& p, std::int64_t begin, std::int64_t end,
                                const float* dT, float* pair_grad, float* centre_force,
                                float* centre_virial) {
  backward_any(p, begin, end, dT, pair_grad, centre_force, centre_virial);
}

}  // namespace

Position locate(const Grid& grid, double x) {
  Position pos;
  const double fine_end = grid.fine_end();
  if (x < grid.x0) {
    // before the first knot (not reached by s >= 0 with the statistics the table was built for)
    pos.interval = 0;
    pos.t = 0.0;
    pos.beyond = x - grid.x0;
  } else if (x < fine_end) {
    pos.interval = std::min(static_cast<std::int64_t>((x - grid.x0) / grid.step), grid.nfine - 1);
    pos.t = x - grid.knot(pos.interval);
  } else if (grid.ncoarse > 0 && x < grid.end()) {
    pos.interval =
        grid.nfine + std::min(static_cast<std::int64_t>((x - fine_end) / grid.coarse_step), grid.ncoarse - 1);
    pos.t = x - grid.knot(pos.interval);
  } else {
    // at or after the last knot, or not a number (which stays one through pos.beyond)
    pos.interval = grid.intervals() - 1;
    pos.t = grid.knot(pos.interval + 1) - grid.knot(pos.interval);
    pos.beyond = x - grid.end();
  }
  return pos;
}

std::int64_t forward(const Problem<double>& p, std::int64_t begin, std::int64_t end, double* T) {
  return forward_f64(p, begin, end, T);
}

std::int64_t forward(const Problem<float>& p, std::int64_t begin, std::int64_t end, float* T) {
  return forward_f32(p, begin, end, T);
}

void backward(const Problem<double>& p, std::int64_t begin, std::int64_t end, const double* dT,
              double* pair_grad, double* centre_force, double* centre_virial) {
  backward_f64(p, begin, end, dT, pair_grad, centre_force, centre_virial);
}

void backward(const Problem<float>& p, std::int64_t begin, std::int64_t end, const float* dT,
              float* pair_grad, float* centre_force, float* centre_virial) {
  backward_f32(p, begin, end, dT, pair_grad, centre_force, centre_virial);
}

template <typename Real>
void scatter_pairs(const Problem<Real>& p, const Real* pair_grad, Real* force, Real* atom_virial) {
  for (std::int64_t atom = 0; atom < p.nframes * p.nloc; ++atom) {
    const std::int64_t frame = atom / p.nloc;
    for (std::int64_t slot = 0; slot < p.nnei; ++slot) {
      const std::int64_t j = p.nlist[atom * p.nnei + slot];
      if (j < 0) continue;
      const Real* g = pair_grad + (atom * p.nnei + slot) * 3;
      // F_j -= g_ij
      Real* fj = force + (frame * p.nall + j) * 3;
      for (int d = 0; d < 3; ++d) fj[d] -= g[d];
      if (atom_virial == nullptr) continue;
      // the pair's virial -g_ij r_ij^T goes to atom j
      Real r[3];
      pair_vector(p, atom, slot, j, r);
      Real* w = atom_virial + (frame * p.nall + j) * 9;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) w[3 * a + b] -= g[a] * r[b];
    }
  }
}

template <typename Real>
void table_values(const Table<Real>& table, std::int64_t width, double x, Real* g, Real* dg) {
  const Position pos = locate(table.grid, x);
  const Real* c = table.coef + pos.interval * 6 * width;
  const Real t = static_cast<Real>(pos.t);
  const Real e = static_cast<Real>(pos.beyond);
  for (std::int64_t m = 0; m < width; ++m) {
    const Real d = dpoly(c, width, m, t);
    g[m] = poly(c, width, m, t) + e * d;
    if (dg != nullptr) dg[m] = d;
  }
}

template void scatter_pairs<float>(const Problem<float>&, const float*, float*, float*);
template void scatter_pairs<double>(const Problem<double>&, const double*, double*, double*);
template void table_values<float>(const Table<float>&, std::int64_t, double, float*, float*);
template void table_values<double>(const Table<double>&, std::int64_t, double, double*, double*);

}  // namespace deepkf::tabulated
