#pragma once
// The cell-list search behind build_neighbor_list (NeighborList.hpp): atoms sorted into bins at least rcut
// thick (of the cell, or of the bounding box without one), and each centre's candidates within rcut from
// the bins around it, images included. Internal to the geometry layer.
#include <array>
#include <cstdint>
#include <vector>

namespace deepkf::geometry {

// One neighbour of one centre before it is placed in a slot.
struct Candidate {
  double r2;       // |r_ij|^2 (A^2)
  std::int64_t j;  // owner atom
  double s[3];     // Cartesian image shift (A)
};

class NeighborBins {
 public:
  // coord: natoms x 3 (A); box: the cell's rows (9 numbers) or null for a non-periodic system. DataError
  // for an atom more than 1e5 cell lengths outside the cell.
  NeighborBins(const double* coord, std::int64_t natoms, const double* box, double rcut);

  // Appends to `out` every (j, shift) with |x_j + shift - x_i| < rcut, other than i itself.
  void candidates(std::int64_t i, std::vector<Candidate>& out) const;

 private:
  // u (natoms x 3): each atom's coordinates scaled to [0, 1) in the cell (img_ the lattice offset taken
  // off) or in the bounding box; widths: the region's extent perpendicular to each pair of directions.
  void place(const double* box, std::vector<double>& u, std::array<double, 3>& widths);
  // nb_ and k_: bins no thinner than rcut, at most ~4 per atom.
  void size_grid(const std::array<double, 3>& widths, double rcut);
  // bin_of_, bin_start_, bin_atoms_ and xb_ by a counting sort.
  void sort_into_bins(const std::vector<double>& u);
  // The position of atom a moved back by its lattice offset: x_a - img_a H.
  void wrapped(std::int64_t a, double* out) const;

  const double* coord_;
  std::int64_t natoms_;
  bool periodic_;
  double rc2_, screen2_;
  std::array<double, 9> h_{};  // cell rows (periodic)
  // Along each direction d: nb[d] bins, and k[d] bins either side of a centre's bin that can hold
  // neighbours.
  std::array<std::int64_t, 3> nb_{1, 1, 1}, k_{1, 1, 1};
  std::vector<std::int64_t> img_;        // natoms x 3: integer lattice offset of each atom (periodic)
  std::vector<std::int64_t> bin_of_;     // natoms
  std::vector<std::int64_t> bin_start_;  // nbins + 1: the atoms of bin b are bin_atoms_[start[b], start[b+1])
  std::vector<std::int64_t> bin_atoms_;  // atoms in bin order
  std::vector<double> xb_;               // wrapped positions in bin order, for a contiguous screening loop
};

}  // namespace deepkf::geometry
