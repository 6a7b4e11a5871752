#include "src/geometry/NeighborList.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string>

#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf {
namespace {

// Relative safety margin on rcut when sizing bins and image ranges, so that rounding in fractional
// coordinates (about 1e-16 of their magnitude) can never hide a neighbour just inside rcut.
constexpr double kMargin = 1e-9;

std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

// One neighbour of one centre before it is placed in a slot.
struct Candidate {
  double r2;       // |r_ij|^2 (A^2)
  std::int64_t j;  // owner atom
  double s[3];     // Cartesian image shift (A)
};

inline bool nearer(const Candidate& p, const Candidate& q) {
  if (p.r2 != q.r2) return p.r2 < q.r2;
  if (p.j != q.j) return p.j < q.j;
  if (p.s[0] != q.s[0]) return p.s[0] < q.s[0];
  if (p.s[1] != q.s[1]) return p.s[1] < q.s[1];
  return p.s[2] < q.s[2];
}

void check_rcut_sel(double rcut, const std::vector<int>& sel, const char* where) {
  if (!std::isfinite(rcut) || rcut <= 0.0) {
    throw ConfigError(std::string(where) + ": rcut must be a positive finite distance, got " + num(rcut));
  }
  if (sel.empty()) throw ConfigError(std::string(where) + ": sel is empty (one entry per atom type needed)");
  for (std::size_t t = 0; t < sel.size(); ++t) {
    if (sel[t] < 0) {
      throw ConfigError(std::string(where) + ": sel[" + std::to_string(t) + "] = " + std::to_string(sel[t]) +
                        " is negative");
    }
  }
}

void check_types(const int* types, std::int64_t n, std::size_t ntypes, const char* where) {
  for (std::int64_t a = 0; a < n; ++a) {
    if (types[a] < 0 || static_cast<std::size_t>(types[a]) >= ntypes) {
      throw DataError(std::string(where) + ": atom " + std::to_string(a) + " has type " +
                      std::to_string(types[a]) + ", outside [0, " + std::to_string(ntypes) + ") of the " +
                      std::to_string(ntypes) + " sel entries");
    }
  }
}

// An empty list for nloc centres: every slot -1 with a zero shift.
NeighborList make_empty(std::int64_t nloc, const std::vector<int>& sel) {
  NeighborList nl;
  nl.nloc = nloc;
  nl.type_begin.resize(sel.size());
  std::int64_t total = 0;
  for (std::size_t t = 0; t < sel.size(); ++t) {
    nl.type_begin[t] = total;
    total += sel[t];
  }
  nl.nnei = total;
  nl.index.assign(static_cast<std::size_t>(nloc * total), -1);
  nl.shift.assign(static_cast<std::size_t>(nloc * total * 3), 0.0);
  nl.max_count.assign(sel.size(), 0);
  return nl;
}

// Places the candidates of centre i into its slots: per neighbour type the sel[t] nearest, ordered by
// (distance, owner index, shift x, y, z); counts the rest as dropped.
void fill_centre(const std::vector<Candidate>& cands, const int* types, const std::vector<int>& sel,
                 std::int64_t i, std::vector<std::int64_t>& count, std::vector<Candidate>& by_type,
                 NeighborList& nl) {
  // Counting partition by neighbour type into by_type, type 0 first.
  std::fill(count.begin(), count.end(), 0);
  for (const Candidate& c : cands) ++count[types[c.j]];
  std::vector<std::int64_t> begin(count.size() + 1, 0);
  for (std::size_t t = 0; t < count.size(); ++t) begin[t + 1] = begin[t] + count[t];
  by_type.resize(cands.size());
  {
    std::vector<std::int64_t> next(begin.begin(), begin.end() - 1);
    for (const Candidate& c : cands) by_type[next[types[c.j]]++] = c;
  }
  std::int64_t* row = nl.index.data() + i * nl.nnei;
  double* srow = nl.shift.data() + i * nl.nnei * 3;
  for (std::size_t t = 0; t < count.size(); ++t) {
    const auto first = by_type.begin() + begin[t];
    const auto last = by_type.begin() + begin[t + 1];
    const std::int64_t keep = std::min<std::int64_t>(count[t], sel[t]);
    // Only the sel[t] nearest need to be in order.
    if (keep < count[t]) std::nth_element(first, first + keep, last, nearer);
    std::sort(first, first + keep, nearer);
    for (std::int64_t k = 0; k < keep; ++k) {
      const Candidate& c = first[k];
      const std::int64_t slot = nl.type_begin[t] + k;
      row[slot] = c.j;
      for (int d = 0; d < 3; ++d) srow[3 * slot + d] = c.s[d];
    }
    nl.ndropped += count[t] - keep;
    nl.max_count[t] = std::max(nl.max_count[t], count[t]);
  }
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The bin grid: along each direction d, nb[d] bins of thickness >= rcut (perpendicular to the other two
// directions), and k[d] = how many bins either side of a centre's bin can hold neighbours.
struct Grid {
  std::array<std::int64_t, 3> nb{1, 1, 1};
  std::array<std::int64_t, 3> k{1, 1, 1};
};

// widths: perpendicular extent of the binned region along each direction (A).
Grid make_grid(const std::array<double, 3>& widths, double rcut, std::int64_t natoms, bool periodic) {
  Grid g;
  const double rc = rcut * (1.0 + kMargin);
  for (int d = 0; d < 3; ++d) {
    // nb = floor(w / rc): bins no thinner than rcut
    const double n = std::floor(widths[d] / rc);
    g.nb[d] = !(n >= 1.0) ? 1 : (n > 1e6 ? 1000000 : static_cast<std::int64_t>(n));  // NaN: 1
  }
  // Sparse systems in huge boxes: at most ~4 bins per atom; thicker bins stay correct, just slower.
  const double cap = std::max(64.0, 4.0 * static_cast<double>(natoms));
  while (static_cast<double>(g.nb[0]) * static_cast<double>(g.nb[1]) * static_cast<double>(g.nb[2]) > cap) {
    const int d = static_cast<int>(std::max_element(g.nb.begin(), g.nb.end()) - g.nb.begin());
    g.nb[d] = (g.nb[d] + 1) / 2;
  }
  for (int d = 0; d < 3; ++d) {
    if (!periodic) {
      g.k[d] = 1;  // bins are at least rcut thick and there are no images
      continue;
    }
    // A neighbour's fractional coordinate differs by at most rcut / w, i.e. rcut nb / w bins:
    // k = ceil(rcut nb / w) (> 1 only when the cell is thinner than rcut along d)
    g.k[d] = static_cast<std::int64_t>(std::ceil(rc * static_cast<double>(g.nb[d]) / widths[d]));
    g.k[d] = std::max<std::int64_t>(g.k[d], 1);
  }
  return g;
}

}  // namespace

NeighborList build_neighbor_list(const double* coord, std::int64_t natoms, const int* types,
                                 const double* box, double rcut, const std::vector<int>& sel) {
  check_rcut_sel(rcut, sel, "neighbour list");
  if (natoms < 0) throw DataError("neighbour list: negative atom count " + std::to_string(natoms));
  check_types(types, natoms, sel.size(), "neighbour list");
  for (std::int64_t a = 0; a < 3 * natoms; ++a) {
    if (!std::isfinite(coord[a])) {
      throw DataError("neighbour list: coordinate " + std::to_string(a % 3) + " of atom " +
                      std::to_string(a / 3) + " is not finite (" + num(coord[a]) + ")");
    }
  }
  NeighborList nl = make_empty(natoms, sel);
  if (natoms == 0) return nl;

  const bool periodic = box != nullptr;
  // u: per-atom coordinates in [0, 1) used for binning; img: per-atom integer lattice offset with
  // u = f - img (periodic; f = fractional coordinates of the given position), zero otherwise.
  std::vector<double> u(static_cast<std::size_t>(3 * natoms));
  std::vector<std::int64_t> img(static_cast<std::size_t>(3 * natoms), 0);
  std::array<double, 3> widths{};
  std::array<double, 9> h{};
  if (periodic) {
    const Cell cell(box);
    h = cell.matrix();
    widths = cell.perpendicular_widths();
    for (std::int64_t a = 0; a < natoms; ++a) {
      double f[3];
      cell.to_fractional(coord + 3 * a, f);
      for (int d = 0; d < 3; ++d) {
        // f = (f - floor f) + floor f, the wrapped part in [0, 1) up to rounding
        const double n = std::floor(f[d]);
        // Wrapping loses about |n| ulps of the position; beyond 1e5 cells that nears the rcut margin.
        if (std::abs(n) > 1e5) {
          throw DataError("neighbour list: atom " + std::to_string(a) + " lies " + num(n) +
                          " cell lengths outside the cell (fractional coordinate " + num(f[d]) + ")");
        }
        u[3 * a + d] = f[d] - n;
        img[3 * a + d] = static_cast<std::int64_t>(n);
      }
    }
  } else {
    // A bounding box stands in for the cell: u = (x - lo) / (hi - lo).
    std::array<double, 3> lo{}, hi{};
    for (int d = 0; d < 3; ++d) lo[d] = hi[d] = coord[d];
    for (std::int64_t a = 0; a < natoms; ++a) {
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], coord[3 * a + d]);
        hi[d] = std::max(hi[d], coord[3 * a + d]);
      }
    }
    for (int d = 0; d < 3; ++d) {
      widths[d] = hi[d] - lo[d];
      for (std::int64_t a = 0; a < natoms; ++a) {
        u[3 * a + d] = widths[d] > 0.0 ? (coord[3 * a + d] - lo[d]) / widths[d] : 0.0;
      }
    }
  }
  const Grid g = make_grid(widths, rcut, natoms, periodic);

  // Counting sort of the atoms into bins (bin = (b0 nb1 + b1) nb2 + b2).
  const std::int64_t nbins = g.nb[0] * g.nb[1] * g.nb[2];
  std::vector<std::int64_t> bin_of(static_cast<std::size_t>(natoms));
  std::vector<std::int64_t> bin_start(static_cast<std::size_t>(nbins + 1), 0);
  for (std::int64_t a = 0; a < natoms; ++a) {
    std::int64_t b[3];
    for (int d = 0; d < 3; ++d) {
      const double v = std::floor(u[3 * a + d] * static_cast<double>(g.nb[d]));
      b[d] = std::min<std::int64_t>(g.nb[d] - 1, std::max<std::int64_t>(0, static_cast<std::int64_t>(v)));
    }
    bin_of[a] = (b[0] * g.nb[1] + b[1]) * g.nb[2] + b[2];
    ++bin_start[bin_of[a] + 1];
  }
  for (std::int64_t b = 0; b < nbins; ++b) bin_start[b + 1] += bin_start[b];
  std::vector<std::int64_t> bin_atoms(static_cast<std::size_t>(natoms));
  {
    std::vector<std::int64_t> fill(bin_start.begin(), bin_start.end() - 1);
    for (std::int64_t a = 0; a < natoms; ++a) bin_atoms[fill[bin_of[a]]++] = a;
  }
  // Wrapped positions in bin order, x_j - img_j H, for a contiguous screening loop.
  std::vector<double> xb(static_cast<std::size_t>(3 * natoms));
  for (std::int64_t p = 0; p < natoms; ++p) {
    const std::int64_t a = bin_atoms[p];
    for (int d = 0; d < 3; ++d) {
      xb[3 * p + d] = coord[3 * a + d];
      if (periodic) {
        xb[3 * p + d] -= static_cast<double>(img[3 * a]) * h[d] +
                         static_cast<double>(img[3 * a + 1]) * h[3 + d] +
                         static_cast<double>(img[3 * a + 2]) * h[6 + d];
      }
    }
  }

  const double rc2 = rcut * rcut;
  // Screening works on wrapped positions, whose rounding differs from the final r_ij by ~1e-15 A: it
  // keeps a slightly larger sphere, and the exact test r < rcut is made on (x_j + shift) - x_i.
  const double screen2 = rc2 * (1.0 + 1e-9) + 1e-18;
  std::vector<Candidate> cands, by_type;
  std::vector<std::int64_t> count(sel.size(), 0);
  for (std::int64_t i = 0; i < natoms; ++i) {
    cands.clear();
    const double* xi = coord + 3 * i;
    double xwi[3] = {xi[0], xi[1], xi[2]};
    if (periodic) {
      for (int d = 0; d < 3; ++d) {
        xwi[d] -= static_cast<double>(img[3 * i]) * h[d] + static_cast<double>(img[3 * i + 1]) * h[3 + d] +
                  static_cast<double>(img[3 * i + 2]) * h[6 + d];
      }
    }
    const std::int64_t bi = bin_of[i];
    const std::int64_t b0 = bi / (g.nb[1] * g.nb[2]), b1 = (bi / g.nb[2]) % g.nb[1], b2 = bi % g.nb[2];
    for (std::int64_t d0 = -g.k[0]; d0 <= g.k[0]; ++d0) {
      // Extended bin B = b + d lies in image S = floor(B / nb) of the wrapped bin B - S nb.
      const std::int64_t B0 = b0 + d0;
      if (!periodic && (B0 < 0 || B0 >= g.nb[0])) continue;
      const std::int64_t S0 = periodic ? floor_div(B0, g.nb[0]) : 0, w0 = B0 - S0 * g.nb[0];
      for (std::int64_t d1 = -g.k[1]; d1 <= g.k[1]; ++d1) {
        const std::int64_t B1 = b1 + d1;
        if (!periodic && (B1 < 0 || B1 >= g.nb[1])) continue;
        const std::int64_t S1 = periodic ? floor_div(B1, g.nb[1]) : 0, w1 = B1 - S1 * g.nb[1];
        for (std::int64_t d2 = -g.k[2]; d2 <= g.k[2]; ++d2) {
          const std::int64_t B2 = b2 + d2;
          if (!periodic && (B2 < 0 || B2 >= g.nb[2])) continue;
          const std::int64_t S2 = periodic ? floor_div(B2, g.nb[2]) : 0, w2 = B2 - S2 * g.nb[2];
          const std::int64_t wb = (w0 * g.nb[1] + w1) * g.nb[2] + w2;
          // t = S H - wrapped(x_i): the screened vector is wrapped(x_j) + t
          double t[3];
          for (int d = 0; d < 3; ++d) {
            t[d] = (periodic ? static_cast<double>(S0) * h[d] + static_cast<double>(S1) * h[3 + d] +
                                   static_cast<double>(S2) * h[6 + d]
                             : 0.0) -
                   xwi[d];
          }
          for (std::int64_t p = bin_start[wb]; p < bin_start[wb + 1]; ++p) {
            const double r0 = xb[3 * p] + t[0], r1 = xb[3 * p + 1] + t[1], r2s = xb[3 * p + 2] + t[2];
            if (r0 * r0 + r1 * r1 + r2s * r2s >= screen2) continue;
            const std::int64_t j = bin_atoms[p];
            Candidate c{0.0, j, {0.0, 0.0, 0.0}};
            if (periodic) {
              // Bins are searched around the wrapped centre x_i - img_i H; the image found there sits at
              // wrapped(x_j) + S H, i.e. near x_i at x_j + (S + img_i - img_j) H: shift = m H
              const double m0 = static_cast<double>(S0 + img[3 * i] - img[3 * j]);
              const double m1 = static_cast<double>(S1 + img[3 * i + 1] - img[3 * j + 1]);
              const double m2 = static_cast<double>(S2 + img[3 * i + 2] - img[3 * j + 2]);
              if (j == i && m0 == 0.0 && m1 == 0.0 && m2 == 0.0) continue;
              for (int d = 0; d < 3; ++d) c.s[d] = m0 * h[d] + m1 * h[3 + d] + m2 * h[6 + d];
            } else if (j == i) {
              continue;
            }
            // r_ij = (x_j + shift) - x_i
            double r2 = 0.0;
            for (int d = 0; d < 3; ++d) {
              const double r = (coord[3 * j + d] + c.s[d]) - xi[d];
              r2 += r * r;
            }
            if (r2 < rc2) {
              c.r2 = r2;
              cands.push_back(c);
            }
          }
        }
      }
    }
    fill_centre(cands, types, sel, i, count, by_type, nl);
  }
  return nl;
}

NeighborList sort_neighbors(const double* x, const int* types, std::int64_t nloc, const std::int64_t* offset,
                            const std::int64_t* neigh, double rcut, const std::vector<int>& sel) {
  check_rcut_sel(rcut, sel, "sort neighbours");
  if (nloc < 0) throw DataError("sort neighbours: negative centre count " + std::to_string(nloc));
  check_types(types, nloc, sel.size(), "sort neighbours");
  NeighborList nl = make_empty(nloc, sel);
  const double rc2 = rcut * rcut;
  std::vector<Candidate> cands, by_type;
  std::vector<std::int64_t> count(sel.size(), 0);
  for (std::int64_t i = 0; i < nloc; ++i) {
    if (offset[i + 1] < offset[i]) {
      throw DataError("sort neighbours: offsets decrease at centre " + std::to_string(i) + " (" +
                      std::to_string(offset[i]) + " then " + std::to_string(offset[i + 1]) + ")");
    }
    cands.clear();
    const double* xi = x + 3 * i;
    for (std::int64_t p = offset[i]; p < offset[i + 1]; ++p) {
      const std::int64_t j = neigh[p];
      if (j < 0) {
        throw DataError("sort neighbours: centre " + std::to_string(i) + " has negative neighbour index " +
                        std::to_string(j));
      }
      if (j == i) continue;
      // r_ij = x_j - x_i
      double r2 = 0.0;
      for (int d = 0; d < 3; ++d) {
        const double r = x[3 * j + d] - xi[d];
        r2 += r * r;
      }
      if (!(r2 < rc2)) continue;
      if (types[j] < 0 || static_cast<std::size_t>(types[j]) >= sel.size()) {
        throw DataError("sort neighbours: neighbour atom " + std::to_string(j) + " has type " +
                        std::to_string(types[j]) + ", outside [0, " + std::to_string(sel.size()) + ")");
      }
      cands.push_back(Candidate{r2, j, {0.0, 0.0, 0.0}});
    }
    fill_centre(cands, types, sel, i, count, by_type, nl);
  }
  return nl;
}

NeighborList sort_neighbors(const double* x, const int* types, std::int64_t nloc, const int* numneigh,
                            const int* const* firstneigh, double rcut, const std::vector<int>& sel) {
  // LAMMPS keeps special-bond flags in the two highest bits of a neighbour index (NEIGHMASK).
  constexpr int kNeighMask = 0x3FFFFFFF;
  std::vector<std::int64_t> offset(static_cast<std::size_t>(nloc + 1), 0);
  for (std::int64_t i = 0; i < nloc; ++i) {
    if (numneigh[i] < 0) {
      throw DataError("sort neighbours: centre " + std::to_string(i) + " has a negative neighbour count " +
                      std::to_string(numneigh[i]));
    }
    offset[i + 1] = offset[i] + numneigh[i];
  }
  std::vector<std::int64_t> neigh(static_cast<std::size_t>(offset[nloc]));
  for (std::int64_t i = 0; i < nloc; ++i) {
    for (int p = 0; p < numneigh[i]; ++p) neigh[offset[i] + p] = firstneigh[i][p] & kNeighMask;
  }
  return sort_neighbors(x, types, nloc, offset.data(), neigh.data(), rcut, sel);
}

std::vector<std::int64_t> max_neighbor_counts(const double* coord, std::int64_t natoms, const int* types,
                                              int ntypes, const double* box, double rcut) {
  if (ntypes <= 0)
    throw ConfigError("max neighbour counts: ntypes must be positive, got " + std::to_string(ntypes));
  // With no slots at all, every neighbour is counted (max_count) and dropped.
  const NeighborList nl = build_neighbor_list(coord, natoms, types, box, rcut, std::vector<int>(ntypes, 0));
  return nl.max_count;
}

CloseContact find_close_contact(const double* coord, std::int64_t natoms, const double* box, double rmin) {
  // One slot per centre: the nearest atom within rmin, whatever its type.
  const std::vector<int> types(static_cast<std::size_t>(std::max<std::int64_t>(natoms, 0)), 0);
  const NeighborList nl = build_neighbor_list(coord, natoms, types.data(), box, rmin, {1});
  CloseContact c;
  for (std::int64_t i = 0; i < nl.nloc; ++i) {
    const std::int64_t j = nl.index[static_cast<std::size_t>(i)];
    if (j < 0) continue;
    c.found = true;
    c.i = i;
    c.j = j;
    double r2 = 0.0;
    for (int d = 0; d < 3; ++d) {
      c.shift[d] = nl.shift[static_cast<std::size_t>(3 * i + d)];
      const double r = coord[3 * j + d] + c.shift[d] - coord[3 * i + d];
      r2 += r * r;
    }
    c.distance = std::sqrt(r2);
    break;
  }
  return c;
}

std::vector<int> auto_sel(const std::vector<std::int64_t>& max_counts, double factor) {
  if (!(factor > 0.0)) throw ConfigError("auto sel: factor " + std::to_string(factor) + " must be positive");
  std::vector<int> sel(max_counts.size());
  for (std::size_t t = 0; t < max_counts.size(); ++t) {
    if (max_counts[t] < 0) {
      throw ConfigError("auto sel: negative neighbour count " + std::to_string(max_counts[t]) + " for type " +
                        std::to_string(t));
    }
    // ceil(factor m); the 1e-9 keeps 1.1 * 40 = 44.000000000000007 at 44
    const auto scaled =
        static_cast<std::int64_t>(std::ceil(static_cast<double>(max_counts[t]) * factor - 1e-9));
    // rounded up to a multiple of 4
    sel[t] = static_cast<int>((scaled + 3) / 4 * 4);
  }
  return sel;
}

}  // namespace deepkf
