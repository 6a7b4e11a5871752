#pragma once
// One factor per quantity that turns the filter's predicted variances h^T P h
// (src/uncertainty/KalmanUncertainty.hpp) into standard deviations in eV/atom and eV/A (docs/uncertainty.md,
// "Calibration"):
//   sigma_e = s_e sqrt(h_e^T P h_e),   sigma_c = s_f sqrt(h_c^T P h_c)   (c a force component)
// The factors are fitted on labelled frames so that the mean predicted variance equals the mean squared
// error there: s^2 = sum err^2 / sum h^T P h over the frames' energies (per atom) or scored force
// components. (The maximum-likelihood scale of a normal error, s^2 = mean err^2 / h^T P h, is ruled by the
// quantities with the smallest h^T P h; on data/si_cp2k.h5 it put sigma about 3 times above the errors.)
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/uncertainty/KalmanUncertainty.hpp"

namespace deepkf {

struct UncertaintyCalibration {
  double energy = 0.0;              // s_e (0: not calibrated)
  double force = 0.0;               // s_f (0: not calibrated)
  std::int64_t energy_samples = 0;  // frames the factor was fitted on
  std::int64_t force_samples = 0;   // force components
  std::string fitted_on;            // what the frames were ("validation data at step 1000", a path list)

  bool has_energy() const { return energy > 0.0; }
  bool has_force() const { return force > 0.0; }

  // Fits the factors on the scores' labels; a quantity without labels (or with only non-positive
  // variances) stays uncalibrated.
  static UncertaintyCalibration fit(const std::vector<FrameScore>& scores, const std::string& fitted_on);

  // {"energy": s_e, "force": s_f, "energy_samples", "force_samples", "fitted_on"} (null for a factor not
  // fitted), and back; ModelError naming `where` for a malformed object.
  nlohmann::json to_json() const;
  static UncertaintyCalibration from_json(const nlohmann::json& j, const std::string& where);
};

// Up to `count` frames of `sets`, evenly spread over their concatenation (all of them when they are fewer),
// as subsets of the same sources.
std::vector<FrameSubset> spread_frames(const std::vector<FrameSubset>& sets, std::int64_t count);

// The calibration of a trained model: scores up to `count` frames of `labelled` (evenly spread) with the
// filter's covariance (score_frames, default options but `seed`) and fits the factors; fitted_on says
// "N frames of WHAT". With time_budget > 0 (seconds) the frames are taken in an order whose every prefix is
// spread over the set, and scoring stops taking new ones once the budget is spent and at least
// min(8, count) are scored. Collective.
UncertaintyCalibration calibrate(DeepPot model, KalmanFilter& filter,
                                 const std::vector<FrameSubset>& labelled, std::int64_t count,
                                 std::uint64_t seed, const std::string& what, Communicator& comm,
                                 double time_budget = 0.0);

// The frames of `sets`, one subset each, in the order 0, n/2, n/4, 3n/4, ... (bit-reversed positions), so
// that the first k of them are spread over all n for every k.
std::vector<FrameSubset> spread_order(const std::vector<FrameSubset>& sets);

// A frame's predicted standard deviations: calibrated (eV/atom, eV/A) where the calibration has the factor,
// else sqrt(h^T P h) in the filter's units. Per atom, sigma_f,i = sqrt(sum_a sigma_ia^2), the counterpart of
// the ensemble's force deviation eps_i (src/model/ModelDeviation.hpp).
struct FrameSigma {
  double sigma_e = 0.0;
  double sigma_f_max = FrameScore::kNone;   // max over the scored atoms of sigma_f,i
  double sigma_f_mean = FrameScore::kNone;  // mean over them
  double sigma_f_rms = FrameScore::kNone;   // sqrt(mean over the scored components of sigma_c^2)
};

FrameSigma frame_sigma(const FrameScore& score, const UncertaintyCalibration& calibration);

// sqrt(sum err^2 / sum sigma^2) over the energies and over the scored force components of `scores`: 1 when
// sigma has the level of the errors (as on the frames the calibration was fitted on); NaN without labels.
std::pair<double, double> error_to_sigma_ratio(const std::vector<FrameScore>& scores,
                                               const UncertaintyCalibration& calibration);

}  // namespace deepkf
