#pragma once
// The CPU kernel of compressed models (docs/compression.md). Torch-free: raw pointers, no threads; the
// caller (EmbeddingTable) runs ranges of centre atoms on its threads.
//
// A compressed model replaces each embedding net G(x) (x the normalised s(r) of a neighbour slot, M output
// channels) by piecewise quintic polynomials on a grid of knots:
//   G_m(x) = sum_k c_ikm t^k,  t = x - x_i  for x in [x_i, x_{i+1}]
// whose value, first and second derivative equal the net's at every knot. For each centre atom the kernel
// evaluates G at every slot and contracts it with that slot's environment row in the same pass:
//   T_am = (1/N_c) sum_j R^_ja G_m(x_j)                                   (forward)
// and, given dE/dT, forms each pair's dE/dr_ij from the exact derivative of the polynomials (backward):
//   dE/dR^_ja = (1/N_c) sum_m dE/dT_am G_m(x_j),  dE/dx_j = (1/N_c) sum_am dE/dT_am R^_ja G'_m(x_j),
// chained through R^ = (R~ - davg) / dstd, x = R^_0 and R~ = (s, s r/|r|) with s = s(|r|).
// se_atten's strip form with smooth gates (tables `gated`) uses G~ = A(x) + w(|r|) B(x) in place of G: A
// is G's table (scaled by the pair's 1 + G_t without gates), B the table of G times the pair's G_t, w the
// switch; the backward pass adds dE/dw w'(r) to each pair's radial derivative.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace deepkf::tabulated {

// Knots of one table: nfine intervals of `step` from x0, then ncoarse intervals of `coarse_step`. Beyond
// the last knot (and before x0) G continues along its tangent line there: G(end) + G'(end) (x - end).
struct Grid {
  double x0 = 0.0;
  double step = 0.0;
  std::int64_t nfine = 0;
  double coarse_step = 0.0;
  std::int64_t ncoarse = 0;

  std::int64_t intervals() const { return nfine + ncoarse; }
  double fine_end() const { return x0 + static_cast<double>(nfine) * step; }
  double end() const { return fine_end() + static_cast<double>(ncoarse) * coarse_step; }
  // Knot k in [0, intervals()]: the same expression the lookup uses.
  double knot(std::int64_t k) const {
    return k <= nfine ? x0 + static_cast<double>(k) * step
                      : fine_end() + static_cast<double>(k - nfine) * coarse_step;
  }
};

// Where x falls: interval i, offset t = x - x_i within it (clamped to the interval), and the distance e
// beyond the table's ends (0 inside; < 0 before x0, > 0 after the end).
struct Position {
  std::int64_t interval = 0;
  double t = 0.0;
  double beyond = 0.0;
};
// Inline: the kernels call it for every slot (se_e3: every pair of slots).
inline Position locate(const Grid& grid, double x) {
  Position pos;
  const double fine_end = grid.fine_end();
  if (x < grid.x0) {
    // before the first knot (reached by se_e3's g below -X, not by s >= 0 with the statistics the table was
    // built for)
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

// One table: coefficients intervals x 6 x M (c_ikm at [i][k][m]), in the model's precision.
template <typename Real>
struct Table {
  Grid grid;
  const Real* coef = nullptr;
};

// Everything the kernel reads, for nframes frames of nloc centres among nall atoms.
template <typename Real>
struct Problem {
  std::int64_t nframes = 0, nloc = 0, nall = 0, nnei = 0, width = 0;  // width = M
  const Real* coord = nullptr;                                        // nframes x nall x 3 (A)
  const std::int64_t* atype = nullptr;                                // nframes x nall (type index)
  const std::int64_t* nlist = nullptr;  // nframes x nloc x nnei (index into nall, -1 empty)
  const Real* shift = nullptr;          // nframes x nloc x nnei x 3 (A), or null (= 0)
  const Real* davg = nullptr;           // ntypes x nnei x 4
  const Real* dstd = nullptr;           // ntypes x nnei x 4
  std::vector<int> slot_type;           // nnei: the neighbour type of each slot (sel's grouping)
  int ntypes = 0;
  // A mixed list (se_atten): a slot's neighbour type is its atom's, ntypes for an empty slot, and the tables
  // cover ntypes + 1 neighbour types; slot_type is not read.
  bool mixed_types = false;
  bool type_one_side = false;
  double rcut = 0.0, rcut_smth = 0.0;
  std::vector<Table<Real>> tables;  // per neighbour type (type_one_side) or per (centre, neighbour) pair
  // Empty, or the tables B weighted by the switch w(r) (se_atten's smooth gates), indexed as `tables` and on
  // the same grids.
  std::vector<Table<Real>> gated;

  std::size_t table_index(int centre_type, int neighbour_type) const {
    const int neighbours = mixed_types ? ntypes + 1 : ntypes;
    return static_cast<std::size_t>(type_one_side ? neighbour_type
                                                  : centre_type * neighbours + neighbour_type);
  }
  const Table<Real>& table(int centre_type, int neighbour_type) const {
    return tables[table_index(centre_type, neighbour_type)];
  }
};

// Centres [begin, end) (frame-major indices in [0, nframes nloc)): T of each into T (nframes nloc x 4 x M,
// row-major per centre). Returns the number of slots whose x lay beyond the end of their table.
std::int64_t forward(const Problem<double>& p, std::int64_t begin, std::int64_t end, double* T);
std::int64_t forward(const Problem<float>& p, std::int64_t begin, std::int64_t end, float* T);

// The backward pass of centres [begin, end) for dE/dT (nframes nloc x 4 x M): g_ij = dE/dr_ij of each slot
// into pair_grad (nframes nloc x nnei x 3; zero for empty slots and slots at or beyond rcut), the force on
// each centre F_i = sum_j g_ij into centre_force (nframes nloc x 3) and its pairs' virial
// W_ab = -sum_j g_ij,a r_ij,b into centre_virial (nframes nloc x 9, row-major).
void backward(const Problem<double>& p, std::int64_t begin, std::int64_t end, const double* dT,
              double* pair_grad, double* centre_force, double* centre_virial);
void backward(const Problem<float>& p, std::int64_t begin, std::int64_t end, const float* dT,
              float* pair_grad, float* centre_force, float* centre_virial);

// The pairs' reaction forces F_j -= g_ij onto force (nframes x nall x 3, which holds the centre forces),
// and with atom_virial (nframes x nall x 9, or null) each pair's -g_ij r_ij^T onto its neighbour j, one
// centre after another (a summation order that does not depend on the threads).
template <typename Real>
void scatter_pairs(const Problem<Real>& p, const Real* pair_grad, Real* force, Real* atom_virial);

// G (and G' when dg is not null) of one table at x, M values each: the reference form of what the kernel
// computes inside its loops, for error estimates and tests.
template <typename Real>
void table_values(const Table<Real>& table, std::int64_t width, double x, Real* g, Real* dg);

}  // namespace deepkf::tabulated
