#pragma once
// What `deepkf uncertainty` writes: the per-frame table (PREFIX.frames.tsv), the summary of how well each
// predicted uncertainty ranks the frames by their actual error, and a plot of uncertainty against error.
#include <cstdint>
#include <string>
#include <vector>

#include "src/model/ModelDeviation.hpp"

namespace deepkf {

// One scored frame. NaN marks a value that does not exist (no labels, no forces).
struct UncertaintyRow {
  std::string system;
  std::int64_t frame = 0;
  std::int64_t timestep = -1;  // the LAMMPS step of a dump's frame; -1 otherwise
  std::int64_t natoms = 0;
  // The Kalman covariance's predicted standard deviations (src/uncertainty/UncertaintyCalibration.hpp).
  double sigma_e = 0.0, sigma_f_max = 0.0, sigma_f_mean = 0.0, sigma_f_rms = 0.0;
  ModelDeviationRow deviation;                            // the ensemble's, as model_devi.out has it
  double err_e = 0.0, err_f_rmse = 0.0, err_f_max = 0.0;  // actual errors (eV/atom, eV/A)
};

// Which column groups the rows carry.
struct UncertaintyColumns {
  bool kalman = false;
  bool ensemble = false;
  bool errors = false;
};

// Tab-separated, one header row of column names: system frame timestep natoms, then sigma_e sigma_f_max
// sigma_f_mean sigma_f_rms (kalman), max_devi_v min_devi_v avg_devi_v max_devi_f min_devi_f avg_devi_f
// (ensemble), err_e err_f_rmse err_f_max (errors). A missing timestep is "-", a missing value "nan".
std::string uncertainty_table(const std::vector<UncertaintyRow>& rows, const UncertaintyColumns& columns);

// Spearman's rank correlation of each predicted uncertainty column with |err_e|, err_f_rmse and err_f_max,
// and the share of the worst 10% of frames by err_f_rmse that the predictor's highest 10% catch, as a
// plain-text table; empty without errors.
std::string rank_summary(const std::vector<UncertaintyRow>& rows, const UncertaintyColumns& columns);

// Predicted uncertainty against actual error on log axes (y = x dashed): the energy panel sigma_e against
// |err_e|, the force panel sigma_f_rms and avg_devi_f against err_f_rmse. Empty without errors.
std::string uncertainty_svg(const std::vector<UncertaintyRow>& rows, const UncertaintyColumns& columns,
                            const std::string& sigma_units_note);

}  // namespace deepkf
