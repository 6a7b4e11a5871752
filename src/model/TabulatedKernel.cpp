#include "src/model/TabulatedKernel.hpp"

#include <algorithm>

#include "src/model/TabulatedSlot.hpp"

namespace deepkf::tabulated {

namespace {

using namespace slot;  // NOLINT(google-build-using-namespace): the helpers of TabulatedSlot.hpp

// The coefficients of slot sl's interval in its table, and (Gated) in its table B.
template <typename Real>
struct Interval {
  slot::Lookup<Real> at;
  const Real* b = nullptr;
};

template <typename Real, bool Gated>
DEEPKF_INLINE Interval<Real> interval(const Problem<Real>& p, int centre, const Slot<Real>& sl) {
  Interval<Real> out;
  const std::size_t k = p.table_index(centre, sl.type);
  out.at = lookup(p.tables[k], p.width, static_cast<double>(sl.R[0]));
  if constexpr (Gated) out.b = p.gated[k].coef + out.at.pos.interval * 6 * p.width;
  return out;
}

template <typename Real, bool Gated>
DEEPKF_INLINE std::int64_t forward_range(const Problem<Real>& p, std::int64_t begin, std::int64_t end,
                                         Real* T) {
  const std::int64_t M = p.width;
  const Real inv_n = Real(1) / static_cast<Real>(p.nnei);
  std::int64_t beyond_end = 0;
  for (std::int64_t atom = begin; atom < end; ++atom) {
    const int centre = centre_type(p, atom);
    Real* T0 = T + atom * 4 * M;
    Real* T1 = T0 + M;
    Real* T2 = T1 + M;
    Real* T3 = T2 + M;
    std::fill(T0, T0 + 4 * M, Real(0));
    for (std::int64_t slot = 0; slot < p.nnei; ++slot) {
      const Slot<Real> sl = make_slot(p, atom, slot, centre);
      const auto in = interval<Real, Gated>(p, centre, sl);
      const Real* c = in.at.coef;
      const Real* cb = in.b;
      const Real t = in.at.t;
      // beyond the table: its tangent line at the end it passed, G + G' e (e = 0 inside)
      if (in.at.pos.beyond > 0.0) ++beyond_end;
      const Real e = in.at.e;
      const Real R0 = sl.R[0], R1 = sl.R[1], R2 = sl.R[2], R3 = sl.R[3];
      const Real w = sl.w;
      if (in.at.pos.beyond == 0.0) {
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
    const int centre = centre_type(p, atom);
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
      const auto in = interval<Real, Gated>(p, centre, sl);
      const Real* c = in.at.coef;
      const Real* cb = in.b;
      const Real t = in.at.t;
      const Real e = in.at.e;
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
      pair_gradient(sl, q0, q, aw, g_out);
      add_pair(g_out, sl.r, force, virial);
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

}  // namespace

// Built for the baseline and for AVX2, the loader picking one (TabulatedSlot.hpp).
DEEPKF_CLONES std::int64_t forward(const Problem<double>& p, std::int64_t begin, std::int64_t end,
                                   double* T) {
  return forward_any(p, begin, end, T);
}

DEEPKF_CLONES std::int64_t forward(const Problem<float>& p, std::int64_t begin, std::int64_t end, float* T) {
  return forward_any(p, begin, end, T);
}

DEEPKF_CLONES void backward(const Problem<double>& p, std::int64_t begin, std::int64_t end, const double* dT,
                            double* pair_grad, double* centre_force, double* centre_virial) {
  backward_any(p, begin, end, dT, pair_grad, centre_force, centre_virial);
}

DEEPKF_CLONES void backward(const Problem<float>& p, std::int64_t begin, std::int64_t end, const float* dT,
                            float* pair_grad, float* centre_force, float* centre_virial) {
  backward_any(p, begin, end, dT, pair_grad, centre_force, centre_virial);
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
  const auto at = lookup(table, width, x);
  for (std::int64_t m = 0; m < width; ++m) {
    const Real d = dpoly(at.coef, width, m, at.t);
    g[m] = poly(at.coef, width, m, at.t) + at.e * d;
    if (dg != nullptr) dg[m] = d;
  }
}

template void scatter_pairs<float>(const Problem<float>&, const float*, float*, float*);
template void scatter_pairs<double>(const Problem<double>&, const double*, double*, double*);
template void table_values<float>(const Table<float>&, std::int64_t, double, float*, float*);
template void table_values<double>(const Table<double>&, std::int64_t, double, double*, double*);

}  // namespace deepkf::tabulated
