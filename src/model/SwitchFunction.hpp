#pragma once
// The smooth radial factor s(r) of the environment matrix (docs/deep-potential.md) and its derivative, for
// one distance: the scalar form of environment_matrix's first column, shared by the compressed-model kernel
// and the training-range bookkeeping. Torch-free.
#include <algorithm>

namespace deepkf {

// s(r) = w(r) / r with u = (r - rcut_smth) / (rcut - rcut_smth) clamped to [0, 1] and
// w = u^3 (-6 u^2 + 15 u - 10) + 1; sets ds = ds/dr = w'(r) / r - w / r^2, with
// w'(r) = -30 u^2 (1 - u)^2 / (rcut - rcut_smth) inside the switch and 0 outside it. r (A) > 0.
template <typename Real>
inline Real switched_inverse(Real r, Real rcut, Real rcut_smth, Real& ds) {
  if (r >= rcut) {
    ds = Real(0);
    return Real(0);
  }
  const Real inv_r = Real(1) / r;
  if (r <= rcut_smth) {
    ds = -inv_r * inv_r;
    return inv_r;
  }
  const Real width = rcut - rcut_smth;
  const Real u = std::min((r - rcut_smth) / width, Real(1));
  const Real one_minus_u = Real(1) - u;
  // (1 - u)^3 (1 + 3 u + 6 u^2) = u^3 (-6 u^2 + 15 u - 10) + 1, without its cancellation near u = 1
  const Real w = one_minus_u * one_minus_u * one_minus_u * (u * (u * Real(6) + Real(3)) + Real(1));
  const Real dw = Real(-30) * u * u * one_minus_u * one_minus_u / width;
  ds = (dw - w * inv_r) * inv_r;
  return w * inv_r;
}

}  // namespace deepkf
