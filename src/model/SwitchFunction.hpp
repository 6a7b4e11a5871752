#pragma once
// The switch w(r) and the smooth radial factor s(r) of the environment matrix (docs/deep-potential.md) with
// their derivatives, for one distance: the scalar form of environment_matrix's first column, shared by the
// compressed-model kernel and the training-range bookkeeping. Torch-free.
#include <algorithm>

namespace deepkf {

// The switch w(r) = u^3 (-6 u^2 + 15 u - 10) + 1 with u = (r - rcut_smth) / (rcut - rcut_smth) clamped to
// [0, 1] (1 inside rcut_smth, 0 from rcut on); sets dw = w'(r) = -30 u^2 (1 - u)^2 / (rcut - rcut_smth)
// inside the switch and 0 outside it.
template <typename Real>
inline Real switch_value(Real r, Real rcut, Real rcut_smth, Real& dw) {
  if (r >= rcut) {
    dw = Real(0);
    return Real(0);
  }
  if (r <= rcut_smth) {
    dw = Real(0);
    return Real(1);
  }
  const Real width = rcut - rcut_smth;
  const Real u = std::min((r - rcut_smth) / width, Real(1));
  const Real one_minus_u = Real(1) - u;
  dw = Real(-30) * u * u * one_minus_u * one_minus_u / width;
  // (1 - u)^3 (1 + 3 u + 6 u^2) = u^3 (-6 u^2 + 15 u - 10) + 1, without its cancellation near u = 1
  return one_minus_u * one_minus_u * one_minus_u * (u * (u * Real(6) + Real(3)) + Real(1));
}

// s(r) = w / r from the switch's w and dw = w'(r) at r (switch_value); sets ds = ds/dr = (w' - w / r) / r.
template <typename Real>
inline Real inverse_of_switch(Real r, Real w, Real dw, Real& ds) {
  const Real inv_r = Real(1) / r;
  ds = (dw - w * inv_r) * inv_r;
  return w * inv_r;
}

// s(r) = w(r) / r and ds = ds/dr (0 from rcut on). r (A) > 0.
template <typename Real>
inline Real switched_inverse(Real r, Real rcut, Real rcut_smth, Real& ds) {
  Real dw = Real(0);
  const Real w = switch_value(r, rcut, rcut_smth, dw);
  return inverse_of_switch(r, w, dw, ds);
}

}  // namespace deepkf
