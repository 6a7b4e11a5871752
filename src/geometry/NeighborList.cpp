#include "src/geometry/NeighborList.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string>

#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"
#include "src/geometry/NeighborBins.hpp"

namespace deepkf {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

using geometry::Candidate;

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

  const geometry::NeighborBins bins(coord, natoms, box, rcut);
  std::vector<Candidate> cands, by_type;
  std::vector<std::int64_t> count(sel.size(), 0);
  for (std::int64_t i = 0; i < natoms; ++i) {
    cands.clear();
    bins.candidates(i, cands);
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
