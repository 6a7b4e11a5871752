#pragma once
// An independent brute-force neighbour search (every atom, every image in [-K, K]^3, no binning) and the
// checks that compare src/geometry's neighbour lists with it, for the neighbour-list tests.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "src/geometry/NeighborList.hpp"
#include "tests/support/Catch.hpp"

namespace deepkf::test::neighbors {

struct RefNeighbor {
  double r2;
  std::int64_t j;
  std::array<double, 3> s;  // Cartesian shift (A)
};

// ref[i][t]: neighbours of centre i with type t, sorted by distance.
using Reference = std::vector<std::vector<std::vector<RefNeighbor>>>;

struct System {
  std::vector<double> x;  // natoms x 3
  std::vector<int> types;
  std::vector<double> box;  // 9 or empty
  std::int64_t natoms() const { return static_cast<std::int64_t>(types.size()); }
  const double* box_ptr() const { return box.empty() ? nullptr : box.data(); }
};

// Solves f H = x for f by Cramer's rule (independent of Cell).
inline std::array<double, 3> fractional(const std::vector<double>& h, const double* x) {
  auto det3 = [](const std::array<double, 9>& m) {
    return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
           m[2] * (m[3] * m[7] - m[4] * m[6]);
  };
  // f H = x  <=>  H^T f^T = x^T; column k of H^T is row k of H.
  std::array<double, 9> ht{};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) ht[3 * r + c] = h[3 * c + r];
  const double d = det3(ht);
  std::array<double, 3> f{};
  for (int k = 0; k < 3; ++k) {
    std::array<double, 9> m = ht;
    for (int r = 0; r < 3; ++r) m[3 * r + k] = x[r];
    f[k] = det3(m) / d;
  }
  return f;
}

inline Reference brute_force(const System& sys, double rcut, int ntypes) {
  const std::int64_t n = sys.natoms();
  std::array<int, 3> K{0, 0, 0};
  if (!sys.box.empty()) {
    const auto& h = sys.box;
    // Face distance along k: V / |h_{k+1} x h_{k+2}|; images up to rcut / w plus the spread of fractional
    // coordinates (atoms may lie outside the cell) are needed, plus one for safety.
    const double* a = h.data();
    double bxc[3] = {a[4] * a[8] - a[5] * a[7], a[5] * a[6] - a[3] * a[8], a[3] * a[7] - a[4] * a[6]};
    const double vol = std::abs(a[0] * bxc[0] + a[1] * bxc[1] + a[2] * bxc[2]);
    std::array<double, 3> fmin{1e300, 1e300, 1e300}, fmax{-1e300, -1e300, -1e300};
    for (std::int64_t i = 0; i < n; ++i) {
      const auto f = fractional(h, sys.x.data() + 3 * i);
      for (int k = 0; k < 3; ++k) fmin[k] = std::min(fmin[k], f[k]), fmax[k] = std::max(fmax[k], f[k]);
    }
    for (int k = 0; k < 3; ++k) {
      const double* p = a + 3 * ((k + 1) % 3);
      const double* q = a + 3 * ((k + 2) % 3);
      const double c[3] = {p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]};
      const double w = vol / std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
      K[k] = static_cast<int>(std::ceil(rcut / w + (fmax[k] - fmin[k]))) + 1;
    }
  }
  Reference ref(static_cast<std::size_t>(n), std::vector<std::vector<RefNeighbor>>(ntypes));
  const double rc2 = rcut * rcut;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      for (int n0 = -K[0]; n0 <= K[0]; ++n0) {
        for (int n1 = -K[1]; n1 <= K[1]; ++n1) {
          for (int n2 = -K[2]; n2 <= K[2]; ++n2) {
            if (i == j && n0 == 0 && n1 == 0 && n2 == 0) continue;
            std::array<double, 3> s{0, 0, 0};
            if (!sys.box.empty()) {
              for (int d = 0; d < 3; ++d) s[d] = n0 * sys.box[d] + n1 * sys.box[3 + d] + n2 * sys.box[6 + d];
            }
            double r2 = 0.0;
            for (int d = 0; d < 3; ++d) {
              const double r = (sys.x[3 * j + d] + s[d]) - sys.x[3 * i + d];
              r2 += r * r;
            }
            if (r2 < rc2) ref[i][sys.types[j]].push_back({r2, j, s});
          }
        }
      }
    }
    for (auto& list : ref[i]) {
      std::stable_sort(list.begin(), list.end(),
                       [](const RefNeighbor& p, const RefNeighbor& q) { return p.r2 < q.r2; });
    }
  }
  return ref;
}

inline bool same_r2(double a, double b) { return std::abs(a - b) <= 1e-11 * (1.0 + std::abs(a)); }

inline bool same_shift(const std::array<double, 3>& a, const double* b) {
  return std::abs(a[0] - b[0]) < 1e-8 && std::abs(a[1] - b[1]) < 1e-8 && std::abs(a[2] - b[2]) < 1e-8;
}

// Compares a neighbour list with the reference: per centre and type the kept neighbours are the nearest
// min(count, sel) in increasing distance (any order among exactly tied distances), no duplicates, empty slots
// are -1 with zero shift, and the counters agree. `owner` maps list indices to atoms (identity for
// build_neighbor_list; ghost -> owner for sort_neighbors); `xs` are the positions list indices refer to.
inline void compare(const NeighborList& nl, const Reference& ref, const System& sys,
                    const std::vector<int>& sel, const std::string& label) {
  INFO(label);
  const std::int64_t n = sys.natoms();
  REQUIRE(nl.nloc == n);
  std::int64_t nnei = 0;
  for (int s : sel) nnei += s;
  REQUIRE(nl.nnei == nnei);
  REQUIRE(nl.index.size() == static_cast<std::size_t>(n * nnei));
  REQUIRE(nl.shift.size() == static_cast<std::size_t>(n * nnei * 3));
  std::int64_t dropped = 0;
  std::vector<std::int64_t> maxc(sel.size(), 0);
  std::int64_t failures = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t slot0 = 0;
    for (std::size_t t = 0; t < sel.size(); ++t) {
      const auto& list = ref[i][t];
      const std::int64_t count = static_cast<std::int64_t>(list.size());
      maxc[t] = std::max(maxc[t], count);
      dropped += std::max<std::int64_t>(0, count - sel[t]);
      const std::int64_t kept = std::min<std::int64_t>(count, sel[t]);
      std::vector<std::pair<std::int64_t, std::array<double, 3>>> seen;
      for (std::int64_t p = 0; p < sel[t]; ++p) {
        const std::int64_t slot = slot0 + p;
        const std::int64_t j = nl.index[i * nnei + slot];
        const double* s = nl.shift.data() + (i * nnei + slot) * 3;
        if (p >= kept) {
          if (j != -1 || s[0] != 0.0 || s[1] != 0.0 || s[2] != 0.0) {
            ++failures;
            FAIL_CHECK("centre " << i << " type " << t << " slot " << p << " should be empty (count " << count
                                 << "), holds atom " << j);
          }
          continue;
        }
        if (j < 0 || j >= n) {
          ++failures;
          FAIL_CHECK("centre " << i << " type " << t << " slot " << p << " holds invalid atom " << j
                               << " (reference count " << count << ")");
          continue;
        }
        double r2 = 0.0;
        for (int d = 0; d < 3; ++d) {
          const double r = (sys.x[3 * j + d] + s[d]) - sys.x[3 * i + d];
          r2 += r * r;
        }
        // The p-th nearest distance must match, and (j, shift) must be one of the reference neighbours
        // at exactly that distance.
        bool found = false;
        for (const auto& c : list) {
          if (same_r2(c.r2, list[p].r2) && c.j == j && same_shift(c.s, s)) found = true;
        }
        bool dup = false;
        for (const auto& q : seen) dup = dup || (q.first == j && same_shift(q.second, s));
        seen.push_back({j, {s[0], s[1], s[2]}});
        if (!same_r2(r2, list[p].r2) || !found || dup || sys.types[j] != static_cast<int>(t)) {
          ++failures;
          FAIL_CHECK("centre " << i << " type " << t << " slot " << p << ": got atom " << j << " shift ("
                               << s[0] << ", " << s[1] << ", " << s[2] << ") at r = " << std::sqrt(r2)
                               << ", reference p-th nearest is atom " << list[p].j
                               << " at r = " << std::sqrt(list[p].r2) << (dup ? " (duplicate)" : ""));
        }
        if (failures > 20) return;
      }
      slot0 += sel[t];
    }
  }
  CHECK(nl.ndropped == dropped);
  CHECK(nl.max_count == maxc);
}

// A random triclinic cell with diagonal lengths in [lo, hi] and off-diagonal tilts up to `skew` times the
// length of the vector they tilt (right-handed since the matrix is diagonally dominant... not required).
inline std::vector<double> random_box(std::mt19937_64& rng, double lo, double hi, double skew) {
  std::uniform_real_distribution<double> len(lo, hi), u(-1.0, 1.0);
  std::vector<double> h(9, 0.0);
  for (int r = 0; r < 3; ++r) {
    const double l = len(rng);
    for (int c = 0; c < 3; ++c) h[3 * r + c] = (r == c) ? l : skew * l * u(rng);
  }
  return h;
}

// natoms random atoms with fractional coordinates uniform in [flo, fhi)^3.
inline System random_system(std::mt19937_64& rng, std::vector<double> box, std::int64_t natoms, int ntypes,
                            double flo, double fhi) {
  System sys;
  sys.box = std::move(box);
  std::uniform_real_distribution<double> f(flo, fhi);
  std::uniform_int_distribution<int> ty(0, ntypes - 1);
  for (std::int64_t a = 0; a < natoms; ++a) {
    const double fr[3] = {f(rng), f(rng), f(rng)};
    for (int d = 0; d < 3; ++d) {
      sys.x.push_back(fr[0] * sys.box[d] + fr[1] * sys.box[3 + d] + fr[2] * sys.box[6 + d]);
    }
    sys.types.push_back(ty(rng));
  }
  return sys;
}

inline std::vector<std::int64_t> ref_max_counts(const Reference& ref, int ntypes) {
  std::vector<std::int64_t> m(ntypes, 0);
  for (const auto& centre : ref)
    for (int t = 0; t < ntypes; ++t) m[t] = std::max<std::int64_t>(m[t], centre[t].size());
  return m;
}

// Runs build_neighbor_list with sel = the reference maxima (all fit) and with sel = half of them (drops).
// Returns the reference maxima.
inline std::vector<std::int64_t> check_system(const System& sys, double rcut, int ntypes,
                                              const std::string& label) {
  const Reference ref = brute_force(sys, rcut, ntypes);
  const auto maxc = ref_max_counts(ref, ntypes);
  std::vector<int> sel_fit(ntypes), sel_small(ntypes);
  for (int t = 0; t < ntypes; ++t) {
    sel_fit[t] = static_cast<int>(maxc[t]) + 3;
    sel_small[t] = static_cast<int>(maxc[t] / 2);
  }
  const NeighborList fit =
      deepkf::build_neighbor_list(sys.x.data(), sys.natoms(), sys.types.data(), sys.box_ptr(), rcut, sel_fit);
  compare(fit, ref, sys, sel_fit, label + " (sel fits)");
  CHECK(fit.ndropped == 0);
  const NeighborList small = deepkf::build_neighbor_list(sys.x.data(), sys.natoms(), sys.types.data(),
                                                         sys.box_ptr(), rcut, sel_small);
  compare(small, ref, sys, sel_small, label + " (sel too small)");
  CHECK(deepkf::max_neighbor_counts(sys.x.data(), sys.natoms(), sys.types.data(), ntypes, sys.box_ptr(),
                                    rcut) == maxc);
  return maxc;
}

}  // namespace deepkf::test::neighbors
