#pragma once
// Neighbour lists in the fixed-slot layout of DeePot-SE: for each centre atom, sel[t] slots per neighbour
// type t, nearest first, padded with empty slots. Plain C++ (no torch) so that the data layer, the model and
// the LAMMPS plugin can all use it.
//
// Definition: r_ij = r_j - r_i over every periodic image of every atom j with |r_ij| < rcut (strictly). A
// cell may be smaller than 2 rcut, or even than rcut: then several images of one atom, and images of atom i
// itself, are neighbours of i. Atom i's own unshifted copy is never its neighbour. Non-periodic systems have
// no images. Order inside one type: increasing distance, ties by owner index, then by the shift's x, y, z.
#include <cstdint>
#include <vector>

namespace deepkf {

struct NeighborList {
  std::int64_t nloc = 0;  // centre atoms
  std::int64_t nnei = 0;  // sum(sel): slots per centre, type 0's sel[0] slots first, then type 1's, ...
  std::vector<std::int64_t> index;      // nloc x nnei: owner atom of each neighbour, -1 for an empty slot
  std::vector<double> shift;            // nloc x nnei x 3 (A): r_j = x[index] + shift; 0 for empty slots
  std::vector<std::int64_t> max_count;  // per neighbour type: most neighbours of that type within rcut of
                                        // any one centre (counted before sel truncates)
  std::int64_t ndropped = 0;  // neighbours within rcut that did not fit in sel (summed over centres)

  // First slot of neighbour type t in a centre's row (sel[0] + ... + sel[t-1]).
  std::vector<std::int64_t> type_begin;
};

// All neighbours of every atom of a (periodic or not) system, in O(N) with a cell list.
// coord: natoms x 3 (A), may lie outside the cell; types: natoms values in [0, sel.size());
// box: 9 values (rows = cell vectors a, b, c, A) or nullptr for a non-periodic system; rcut (A) > 0;
// sel: slots per neighbour type (>= 0 each). Shifts are relative to the given (unwrapped) coordinates.
// Throws ConfigError for a bad rcut or sel, DataError for bad types, non-finite coordinates, a singular box
// or an atom more than 1e5 cell lengths outside the cell. A left-handed box is accepted here.
NeighborList build_neighbor_list(const double* coord, std::int64_t natoms, const int* types,
                                 const double* box, double rcut, const std::vector<int>& sel);

// Sorts externally supplied candidate neighbours into the slot layout (for LAMMPS, whose full neighbour
// list runs over local + ghost atoms with absolute positions). x: nall x 3 (A); types: nall values in
// [0, sel.size()); centres are atoms 0..nloc-1; the candidates of centre i are neigh[offset[i] ..
// offset[i+1]) (indices into x; offset has nloc + 1 entries). Candidates at r >= rcut, and i itself, are
// ignored. The result's shifts are all zero and its indices point into x (they may be >= nloc).
NeighborList sort_neighbors(const double* x, const int* types, std::int64_t nloc, const std::int64_t* offset,
                            const std::int64_t* neigh, double rcut, const std::vector<int>& sel);

// The same with LAMMPS's list arrays: the candidates of centre i are firstneigh[i][0 .. numneigh[i]);
// LAMMPS's special-bond bits (above bit 29) are masked off the indices.
NeighborList sort_neighbors(const double* x, const int* types, std::int64_t nloc, const int* numneigh,
                            const int* const* firstneigh, double rcut, const std::vector<int>& sel);

// Per neighbour type, the largest number of neighbours within rcut of any centre, without sel limits
// (what DeePMD's "auto" sel is computed from). Arguments as for build_neighbor_list; types in [0, ntypes).
std::vector<std::int64_t> max_neighbor_counts(const double* coord, std::int64_t natoms, const int* types,
                                              int ntypes, const double* box, double rcut);

// Two atoms closer than this (A), periodic images included, make a frame corrupt: no structure has them,
// and the model's environment matrix divides by the distance. Readers reject such frames.
constexpr double kMinAtomDistance = 0.1;

// The closest approach below a threshold: atom i and atom j (j == i: i's own periodic image), with j's
// image at x_j + shift, |r_ij| = distance.
struct CloseContact {
  bool found = false;
  std::int64_t i = -1, j = -1;
  double distance = 0.0;
  double shift[3] = {0.0, 0.0, 0.0};
};

// The first atom i (lowest index) with another atom, or a periodic image of any atom including its own,
// closer than `rmin` (A), and its nearest such neighbour; found == false when there is none. O(N) with
// the cell list of build_neighbor_list (arguments as there).
CloseContact find_close_contact(const double* coord, std::int64_t natoms, const double* box, double rmin);

// DeePMD's "auto" sel: per type ceil(factor * max_count) rounded up to a multiple of 4 (0 stays 0); factor
// 1.1 for "auto", f for "auto:f". The one place this is computed (training and `deepkf data summary`).
std::vector<int> auto_sel(const std::vector<std::int64_t>& max_counts, double factor = 1.1);

}  // namespace deepkf
