#pragma once
// A model's errors on labelled data, as `deepkf test` reports them: RMSE and MAE per system and over all,
// one row per frame, and the points of the energy and force parity plots.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/Dataset.hpp"
#include "src/eval/ErrorMetrics.hpp"
#include "src/eval/Potential.hpp"
#include "src/model/ModelFile.hpp"

namespace deepkf {

struct FrameResult {
  std::string system;
  std::int64_t frame = 0;
  std::int64_t natoms = 0;
  double e_ref = 0.0, e_pred = 0.0;  // total energies (eV)
  double f_rmse = 0.0;               // force RMSE over the frame's components (eV/A); NaN without forces
  double v_rmse_per_atom = 0.0;      // virial RMSE per atom (eV/atom); NaN without virials
  // The frame's force components in LabelledErrors::f_ref / f_pred start here (-1 without forces).
  std::int64_t force_begin = -1;
  std::vector<double> v_ref, v_pred;  // the 9 virial components (eV), row-major; empty without virials
};

struct SystemResult {
  std::string source;
  std::int64_t frames = 0;  // tested
  ErrorMetrics metrics;
  std::vector<int> atom_types;  // the model's type index of each atom, in the data's order
};

struct LabelledErrors {
  std::vector<SystemResult> systems;
  ErrorMetrics total;
  std::int64_t total_frames = 0;
  std::vector<FrameResult> frames;
  // Parity plot points: energies per atom (eV/atom), force components (eV/A).
  std::vector<double> e_ref, e_pred, f_ref, f_pred;
};

// Evaluates `model` on every frame of `data` (the first `max_frames` of each system when it is positive),
// `batch` frames at a time, through Potential on the device its weights are on; predictions are compared in
// float64 with the labels as stored, whatever the model's precision. Throws ModelError naming the frame and
// system when a predicted energy, force or virial is not finite.
LabelledErrors labelled_errors(const LoadedModel& model, const Dataset& data, int batch,
                               std::int64_t max_frames = 0);

// The per-frame table, tab-separated with a commented header.
std::string frames_table(const LabelledErrors& result);
// Energy (and, with forces, force) parity plots as one SVG document; with 2 to kParitySystemColours systems
// each system has its own colour and its RMSE in the legend.
constexpr std::size_t kParitySystemColours = 6;
std::string parity_svg(const LabelledErrors& result);

}  // namespace deepkf
