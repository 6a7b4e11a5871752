#pragma once
// The predicted uncertainty of a model's energies and forces from the RLEKF covariance of its weights
// (docs/uncertainty.md). For a scalar prediction y with gradient h = dy/dw, the filter's covariance P of the
// weights gives the variance of y to first order,
//   Var(y) = h^T P h = sum_i h_i^T P_i h_i   (one term per covariance block),
// in units set by p0, lambda and the measurement normalisation; a calibration factor per quantity
// (UncertaintyCalibration.hpp) turns it into eV/atom and eV/A. The quantities of a frame are its
// energy per atom E/N and the three force components F_ia of each scored atom i: one backward pass each,
// their gradients collected as rows of H and applied to P many at a time (KalmanFilter::quadratic_forms
// reads P once per batch of rows). A force component's gradient is a double backward pass through the
// forces' graph, or, for a float64 model, the difference of two energy gradients (optim/DifferenceGradients).
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Communicator.hpp"
#include "src/data/FrameSource.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

// How the gradient of a force component is taken: kAuto is kDifference for a float64 model (one energy pass
// per component: a frame of DeePMD-kit's water model scored in 0.44 of the time, variances within 5e-4
// relative of the graph's on the tests' model) and kGraph otherwise (float32 would lose half the digits of
// the difference).
enum class ForceGradients { kAuto, kGraph, kDifference };

struct UncertaintyOptions {
  // Atoms whose force components are scored in each frame (3 backward passes each), drawn at random from
  // the seed and the frame; 0 (or at least the frame's atom count): every atom.
  std::int64_t force_atoms = 8;
  std::uint64_t seed = 1;
  // Gradient rows each rank contributes to one application of P; 0: as many as 256 MiB of rows over all
  // ranks allows, at most 128 in all.
  std::int64_t columns = 0;
  ForceGradients force_gradients = ForceGradients::kAuto;
  // Seconds after which a rank takes no new frame once it has scored its share of min_frames (0: every
  // frame). The frames are taken in the order given, so the caller orders them for a prefix to be useful.
  double time_budget = 0.0;
  std::int64_t min_frames = 0;
};

// One frame's predicted variances (uncalibrated: h^T P h in the filter's units) and its actual errors.
struct FrameScore {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::int64_t system = 0;  // index into the frame sets scored
  std::int64_t frame = 0;   // position in its frame set
  std::int64_t natoms = 0;
  double var_e = 0.0;               // h^T P h of E / N
  std::vector<std::int64_t> atoms;  // the scored atoms, increasing
  std::vector<double> var_f;        // 3 per scored atom: h^T P h of F_ix, F_iy, F_iz
  double err_e = kNone;             // (E - E_ref) / N (eV/atom); NaN without labels
  double err_f_rmse = kNone;        // over all 3N components (eV/A); NaN without forces
  double err_f_max = kNone;         // max_i |F_i - F_i^ref| (eV/A); NaN without forces
  std::vector<double> err_f;        // 3 per scored atom: F_ia - F_ia^ref (eV/A); empty without forces
};

// What the scoring cost, summed over this rank.
struct ScoringCost {
  std::int64_t frames = 0;             // frames this rank evaluated
  std::int64_t backward_passes = 0;    // gradients this rank computed (one per quantity)
  std::int64_t covariance_passes = 0;  // applications of P (each reads this rank's blocks once on the CPU)
  double gradient_seconds = 0.0;       // forward and backward passes
  double covariance_seconds = 0.0;     // quadratic forms, gathers included
};

struct ScoringResult {
  std::vector<FrameScore> frames;  // every frame of every set, in order, on every rank
  ScoringCost cost;                // this rank's
};

// Which atoms of a frame are scored: min(count, natoms) distinct atoms in increasing order, drawn by a
// generator seeded from (seed, key) (every atom when count is 0), so that they do not depend on the rank.
std::vector<std::int64_t> scored_atoms(std::int64_t natoms, std::int64_t count, std::uint64_t seed,
                                       std::uint64_t key);

// Scores every frame of `sets` (their types already those of the model's type map; with a time budget, the
// frames each rank reached within it) with `model` and the covariance of `filter`, whose parameters are
// the model's. Collective: frames are dealt to the ranks in turn, each rank evaluates its own, the gradient
// rows are gathered and every rank applies its blocks (KalmanFilter::quadratic_forms). Throws ModelError
// naming the frame for a non-finite prediction.
ScoringResult score_frames(DeepPot model, KalmanFilter& filter, const std::vector<FrameSubset>& sets,
                           const UncertaintyOptions& options, Communicator& comm);

}  // namespace deepkf
