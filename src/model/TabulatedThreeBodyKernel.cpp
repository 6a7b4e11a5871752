#include "src/model/TabulatedThreeBodyKernel.hpp"

#include <algorithm>

#include "src/model/TabulatedSlot.hpp"

namespace deepkf::tabulated {

namespace {

using namespace slot;  // NOLINT(google-build-using-namespace): the helpers of TabulatedSlot.hpp

// A slot with r^ != 0 and its index in the neighbour list.
template <typename Real>
struct Active {
  Slot<Real> sl;
  std::int64_t index = 0;
};

// The slots of centre `atom` with r^ != 0, in list order, into `out`; returns their count.
template <typename Real>
DEEPKF_INLINE std::int64_t active_slots(const ThreeBodyProblem<Real>& p, std::int64_t atom, int centre,
                                        Active<Real>* out) {
  std::int64_t n = 0;
  for (std::int64_t index = 0; index < p.atoms.nnei; ++index) {
    const Slot<Real> sl = make_slot(p.atoms, atom, index, centre);
    if (sl.R[1] == Real(0) && sl.R[2] == Real(0) && sl.R[3] == Real(0)) continue;
    out[n].sl = sl;
    out[n].index = index;
    ++n;
  }
  return n;
}

// g_jk = r^_j . r^_k
template <typename Real>
DEEPKF_INLINE Real dot(const Slot<Real>& j, const Slot<Real>& k) {
  return j.R[1] * k.R[1] + j.R[2] * k.R[2] + j.R[3] * k.R[3];
}

// visit(j, k, sj, sk, ab, g, table, at) for every pair j <= k of the n active slots act: ab indexes the pair
// of their types, g = r^_j . r^_k, at is g's place in the pair's table.
template <typename Real, typename Visit>
DEEPKF_INLINE void for_each_pair(const ThreeBodyProblem<Real>& p, const Active<Real>* act, std::int64_t n,
                                 Visit&& visit) {
  for (std::int64_t j = 0; j < n; ++j) {
    const Slot<Real>& sj = act[j].sl;
    for (std::int64_t k = j; k < n; ++k) {
      const Slot<Real>& sk = act[k].sl;
      const int ab = p.pair(sj.type, sk.type);
      const Real g = dot(sj, sk);
      const Table<Real>& table = p.atoms.tables[static_cast<std::size_t>(p.pair_table[ab])];
      visit(j, k, sj, sk, ab, g, table, lookup(table, p.atoms.width, static_cast<double>(g)));
    }
  }
}

template <typename Real, bool Tebd, bool Gated>
DEEPKF_INLINE std::int64_t forward_range(const ThreeBodyProblem<Real>& p, std::int64_t begin,
                                         std::int64_t end, Real* D) {
  const std::int64_t M = p.atoms.width;
  std::vector<Active<Real>> act(static_cast<std::size_t>(p.atoms.nnei));
  std::int64_t beyond = 0;
  for (std::int64_t atom = begin; atom < end; ++atom) {
    Real* d = D + atom * M;
    std::fill(d, d + M, Real(0));
    const std::int64_t n = active_slots(p, atom, centre_type(p.atoms, atom), act.data());
    for_each_pair(p, act.data(), n,
                  [&](std::int64_t j, std::int64_t k, const Slot<Real>& sj, const Slot<Real>& sk, int ab,
                      Real g, const Table<Real>& table, const Lookup<Real>& at) {
                    // counted as EmbeddingTableImpl::values counts: beyond the end, or more than a fine step
                    // before x0
                    if (at.pos.beyond > 0.0 || at.pos.beyond < -table.grid.step)
                      beyond += Tebd && j != k ? 2 : 1;
                    // D_m += c g G_m(g) f_m, c = the pair's weight (half of it on the diagonal)
                    const Real c = (j == k ? Real(0.5) : Real(1)) * p.pair_scale[ab] * g;
                    const Real* h = Tebd ? p.factor + ab * M : nullptr;
                    const Real gate = Gated ? sj.w * sk.w : Real(1);
                    const Real* cf = at.coef;
                    const Real t = at.t, e = at.e;
                    if (at.pos.beyond == 0.0) {
#pragma omp simd
                      for (std::int64_t m = 0; m < M; ++m) {
                        Real v = poly(cf, M, m, t);
                        if constexpr (Tebd) v *= Real(1) + h[m] * gate;
                        d[m] += c * v;
                      }
                    } else {
        // beyond the table: its tangent line at the end it passed, G + G' e
#pragma omp simd
                      for (std::int64_t m = 0; m < M; ++m) {
                        Real v = poly(cf, M, m, t) + e * dpoly(cf, M, m, t);
                        if constexpr (Tebd) v *= Real(1) + h[m] * gate;
                        d[m] += c * v;
                      }
                    }
                  });
  }
  return beyond;
}

template <typename Real, bool Tebd, bool Gated>
DEEPKF_INLINE void backward_range(const ThreeBodyProblem<Real>& p, std::int64_t begin, std::int64_t end,
                                  const Real* dD, Real* pair_grad, Real* centre_force, Real* centre_virial) {
  const std::int64_t M = p.atoms.width, nnei = p.atoms.nnei;
  std::vector<Active<Real>> act(static_cast<std::size_t>(nnei));
  // per active slot: dE/dr^_j (3) and dE/dw_j
  std::vector<Real> dr(static_cast<std::size_t>(3 * nnei)), dw(static_cast<std::size_t>(nnei));
  for (std::int64_t atom = begin; atom < end; ++atom) {
    const int centre = centre_type(p.atoms, atom);
    const Real* dd = dD + atom * M;
    Real* grads = pair_grad + atom * nnei * 3;
    std::fill(grads, grads + nnei * 3, Real(0));
    const std::int64_t n = active_slots(p, atom, centre, act.data());
    std::fill(dr.begin(), dr.begin() + 3 * n, Real(0));
    std::fill(dw.begin(), dw.begin() + n, Real(0));
    for_each_pair(p, act.data(), n,
                  [&](std::int64_t j, std::int64_t k, const Slot<Real>& sj, const Slot<Real>& sk, int ab,
                      Real g, const Table<Real>&, const Lookup<Real>& at) {
                    const Real c = (j == k ? Real(0.5) : Real(1)) * p.pair_scale[ab];
                    const Real* h = Tebd ? p.factor + ab * M : nullptr;
                    const Real gate = Gated ? sj.w * sk.w : Real(1);
                    const Real* cf = at.coef;
                    const Real t = at.t, e = at.e;
                    // sum_m dE/dD_m f_m (G_m + g G'_m), and with the gates sum_m dE/dD_m G_m H_m
                    Real through_g = 0, through_gate = 0;
#pragma omp simd reduction(+ : through_g, through_gate)
                    for (std::int64_t m = 0; m < M; ++m) {
                      const Real slope = dpoly(cf, M, m, t);
                      const Real v = poly(cf, M, m, t) + e * slope;
                      Real f = Real(1);
                      if constexpr (Tebd) f += h[m] * gate;
                      through_g += dd[m] * f * (v + g * slope);
                      if constexpr (Gated) through_gate += dd[m] * v * h[m];
                    }
                    // dE/dr^_j += dE/dg r^_k, dE/dr^_k += dE/dg r^_j (twice r^_j on the diagonal: g =
                    // |r^_j|^2)
                    const Real de_dg = c * through_g;
                    Real* qj = dr.data() + 3 * j;
                    Real* qk = dr.data() + 3 * k;
                    for (int a = 0; a < 3; ++a) {
                      qj[a] += de_dg * sk.R[1 + a];
                      qk[a] += de_dg * sj.R[1 + a];
                    }
                    if constexpr (Gated) {
                      // dE/d(w_j w_k) = c g sum_m dE/dD_m G_m H_m
                      const Real de_dgate = c * g * through_gate;
                      dw[static_cast<std::size_t>(j)] += de_dgate * sk.w;
                      dw[static_cast<std::size_t>(k)] += de_dgate * sj.w;
                    }
                  });
    Real force[3] = {0, 0, 0};
    Real virial[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (std::int64_t j = 0; j < n; ++j) {
      const auto& a = act[static_cast<std::size_t>(j)];
      if (!a.sl.inside) continue;
      // dE/dR~_1..3 = dE/dr^ / dstd_1..3; column 0 (s itself) does not enter g
      const Real* dstd = p.atoms.dstd + (static_cast<std::int64_t>(centre) * nnei + a.index) * 4;
      const Real* q = dr.data() + 3 * j;
      const Real scaled[3] = {q[0] / dstd[1], q[1] / dstd[2], q[2] / dstd[3]};
      Real* g_out = grads + a.index * 3;
      pair_gradient(a.sl, Real(0), scaled, dw[static_cast<std::size_t>(j)], g_out);
      add_pair(g_out, a.sl.r, force, virial);
    }
    std::copy(force, force + 3, centre_force + atom * 3);
    std::copy(virial, virial + 9, centre_virial + atom * 9);
  }
}

// The form of p: se_e3, se_e3_tebd without gates, with them.
template <typename Real>
DEEPKF_INLINE std::int64_t forward_any(const ThreeBodyProblem<Real>& p, std::int64_t begin, std::int64_t end,
                                       Real* D) {
  if (p.factor == nullptr) return forward_range<Real, false, false>(p, begin, end, D);
  return p.gated ? forward_range<Real, true, true>(p, begin, end, D)
                 : forward_range<Real, true, false>(p, begin, end, D);
}

template <typename Real>
DEEPKF_INLINE void backward_any(const ThreeBodyProblem<Real>& p, std::int64_t begin, std::int64_t end,
                                const Real* dD, Real* pair_grad, Real* centre_force, Real* centre_virial) {
  if (p.factor == nullptr) {
    backward_range<Real, false, false>(p, begin, end, dD, pair_grad, centre_force, centre_virial);
  } else if (p.gated) {
    backward_range<Real, true, true>(p, begin, end, dD, pair_grad, centre_force, centre_virial);
  } else {
    backward_range<Real, true, false>(p, begin, end, dD, pair_grad, centre_force, centre_virial);
  }
}

}  // namespace

// Built for the baseline and for AVX2, the loader picking one (TabulatedSlot.hpp).
DEEPKF_CLONES std::int64_t three_body_forward(const ThreeBodyProblem<double>& p, std::int64_t begin,
                                              std::int64_t end, double* D) {
  return forward_any(p, begin, end, D);
}

DEEPKF_CLONES std::int64_t three_body_forward(const ThreeBodyProblem<float>& p, std::int64_t begin,
                                              std::int64_t end, float* D) {
  return forward_any(p, begin, end, D);
}

DEEPKF_CLONES void three_body_backward(const ThreeBodyProblem<double>& p, std::int64_t begin,
                                       std::int64_t end, const double* dD, double* pair_grad,
                                       double* centre_force, double* centre_virial) {
  backward_any(p, begin, end, dD, pair_grad, centre_force, centre_virial);
}

DEEPKF_CLONES void three_body_backward(const ThreeBodyProblem<float>& p, std::int64_t begin, std::int64_t end,
                                       const float* dD, float* pair_grad, float* centre_force,
                                       float* centre_virial) {
  backward_any(p, begin, end, dD, pair_grad, centre_force, centre_virial);
}

}  // namespace deepkf::tabulated
