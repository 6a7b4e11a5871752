#include "src/geometry/NeighborBins.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "src/core/Error.hpp"
#include "src/geometry/Cell.hpp"

namespace deepkf::geometry {
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

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

NeighborBins::NeighborBins(const double* coord, std::int64_t natoms, const double* box, double rcut)
    : coord_(coord),
      natoms_(natoms),
      periodic_(box != nullptr),
      rc2_(rcut * rcut),
      // Screening works on wrapped positions, whose rounding differs from the final r_ij by ~1e-15 A: it
      // keeps a slightly larger sphere, and the exact test r < rcut is made on (x_j + shift) - x_i.
      screen2_(rcut * rcut * (1.0 + 1e-9) + 1e-18),
      img_(static_cast<std::size_t>(3 * natoms), 0) {
  std::vector<double> u(static_cast<std::size_t>(3 * natoms));
  std::array<double, 3> widths{};
  place(box, u, widths);
  size_grid(widths, rcut);
  sort_into_bins(u);
}

void NeighborBins::place(const double* box, std::vector<double>& u, std::array<double, 3>& widths) {
  const double* coord = coord_;
  const std::int64_t natoms = natoms_;
  // u: per-atom coordinates in [0, 1) used for binning; img: per-atom integer lattice offset with
  // u = f - img (periodic; f = fractional coordinates of the given position), zero otherwise.
  if (periodic_) {
    const Cell cell(box);
    h_ = cell.matrix();
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
        img_[3 * a + d] = static_cast<std::int64_t>(n);
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
}

void NeighborBins::size_grid(const std::array<double, 3>& widths, double rcut) {
  // The bin grid: along each direction d, nb[d] bins of thickness >= rcut (perpendicular to the other two
  // directions).
  const double rc = rcut * (1.0 + kMargin);
  for (int d = 0; d < 3; ++d) {
    // nb = floor(w / rc): bins no thinner than rcut
    const double n = std::floor(widths[d] / rc);
    nb_[d] = !(n >= 1.0) ? 1 : (n > 1e6 ? 1000000 : static_cast<std::int64_t>(n));  // NaN: 1
  }
  // Sparse systems in huge boxes: at most ~4 bins per atom; thicker bins stay correct, just slower.
  const double cap = std::max(64.0, 4.0 * static_cast<double>(natoms_));
  while (static_cast<double>(nb_[0]) * static_cast<double>(nb_[1]) * static_cast<double>(nb_[2]) > cap) {
    const int d = static_cast<int>(std::max_element(nb_.begin(), nb_.end()) - nb_.begin());
    nb_[d] = (nb_[d] + 1) / 2;
  }
  for (int d = 0; d < 3; ++d) {
    if (!periodic_) {
      k_[d] = 1;  // bins are at least rcut thick and there are no images
      continue;
    }
    // A neighbour's fractional coordinate differs by at most rcut / w, i.e. rcut nb / w bins:
    // k = ceil(rcut nb / w) (> 1 only when the cell is thinner than rcut along d)
    k_[d] = static_cast<std::int64_t>(std::ceil(rc * static_cast<double>(nb_[d]) / widths[d]));
    k_[d] = std::max<std::int64_t>(k_[d], 1);
  }
}

void NeighborBins::sort_into_bins(const std::vector<double>& u) {
  const std::int64_t natoms = natoms_;
  // Counting sort of the atoms into bins (bin = (b0 nb1 + b1) nb2 + b2).
  const std::int64_t nbins = nb_[0] * nb_[1] * nb_[2];
  bin_of_.resize(static_cast<std::size_t>(natoms));
  bin_start_.assign(static_cast<std::size_t>(nbins + 1), 0);
  for (std::int64_t a = 0; a < natoms; ++a) {
    std::int64_t b[3];
    for (int d = 0; d < 3; ++d) {
      const double v = std::floor(u[3 * a + d] * static_cast<double>(nb_[d]));
      b[d] = std::min<std::int64_t>(nb_[d] - 1, std::max<std::int64_t>(0, static_cast<std::int64_t>(v)));
    }
    bin_of_[a] = (b[0] * nb_[1] + b[1]) * nb_[2] + b[2];
    ++bin_start_[bin_of_[a] + 1];
  }
  for (std::int64_t b = 0; b < nbins; ++b) bin_start_[b + 1] += bin_start_[b];
  bin_atoms_.resize(static_cast<std::size_t>(natoms));
  {
    std::vector<std::int64_t> fill(bin_start_.begin(), bin_start_.end() - 1);
    for (std::int64_t a = 0; a < natoms; ++a) bin_atoms_[fill[bin_of_[a]]++] = a;
  }
  xb_.resize(static_cast<std::size_t>(3 * natoms));
  for (std::int64_t p = 0; p < natoms; ++p) wrapped(bin_atoms_[p], xb_.data() + 3 * p);
}

void NeighborBins::wrapped(std::int64_t a, double* out) const {
  for (int d = 0; d < 3; ++d) {
    out[d] = coord_[3 * a + d];
    if (periodic_) {
      out[d] -= static_cast<double>(img_[3 * a]) * h_[d] + static_cast<double>(img_[3 * a + 1]) * h_[3 + d] +
                static_cast<double>(img_[3 * a + 2]) * h_[6 + d];
    }
  }
}

void NeighborBins::candidates(std::int64_t i, std::vector<Candidate>& out) const {
  const double* xi = coord_ + 3 * i;
  double xwi[3];
  wrapped(i, xwi);
  const auto& h = h_;
  const auto& img = img_;
  const std::int64_t bi = bin_of_[i];
  const std::int64_t b0 = bi / (nb_[1] * nb_[2]), b1 = (bi / nb_[2]) % nb_[1], b2 = bi % nb_[2];
  for (std::int64_t d0 = -k_[0]; d0 <= k_[0]; ++d0) {
    // Extended bin B = b + d lies in image S = floor(B / nb) of the wrapped bin B - S nb.
    const std::int64_t B0 = b0 + d0;
    if (!periodic_ && (B0 < 0 || B0 >= nb_[0])) continue;
    const std::int64_t S0 = periodic_ ? floor_div(B0, nb_[0]) : 0, w0 = B0 - S0 * nb_[0];
    for (std::int64_t d1 = -k_[1]; d1 <= k_[1]; ++d1) {
      const std::int64_t B1 = b1 + d1;
      if (!periodic_ && (B1 < 0 || B1 >= nb_[1])) continue;
      const std::int64_t S1 = periodic_ ? floor_div(B1, nb_[1]) : 0, w1 = B1 - S1 * nb_[1];
      for (std::int64_t d2 = -k_[2]; d2 <= k_[2]; ++d2) {
        const std::int64_t B2 = b2 + d2;
        if (!periodic_ && (B2 < 0 || B2 >= nb_[2])) continue;
        const std::int64_t S2 = periodic_ ? floor_div(B2, nb_[2]) : 0, w2 = B2 - S2 * nb_[2];
        const std::int64_t wb = (w0 * nb_[1] + w1) * nb_[2] + w2;
        // t = S H - wrapped(x_i): the screened vector is wrapped(x_j) + t
        double t[3];
        for (int d = 0; d < 3; ++d) {
          t[d] = (periodic_ ? static_cast<double>(S0) * h[d] + static_cast<double>(S1) * h[3 + d] +
                                  static_cast<double>(S2) * h[6 + d]
                            : 0.0) -
                 xwi[d];
        }
        for (std::int64_t p = bin_start_[wb]; p < bin_start_[wb + 1]; ++p) {
          const double r0 = xb_[3 * p] + t[0], r1 = xb_[3 * p + 1] + t[1], r2s = xb_[3 * p + 2] + t[2];
          if (r0 * r0 + r1 * r1 + r2s * r2s >= screen2_) continue;
          const std::int64_t j = bin_atoms_[p];
          Candidate c{0.0, j, {0.0, 0.0, 0.0}};
          if (periodic_) {
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
            const double r = (coord_[3 * j + d] + c.s[d]) - xi[d];
            r2 += r * r;
          }
          if (r2 < rc2_) {
            c.r2 = r2;
            out.push_back(c);
          }
        }
      }
    }
  }
}

}  // namespace deepkf::geometry
