#pragma once
// RLEKF's settings (docs/input.md, "optimizer"): where an input file may give each, their defaults and
// limits, and the resolved form written next to the outputs. The only place these keys are read.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optim/OptimizerInput.hpp"

namespace deepkf {

struct RlekfSettings {
  std::int64_t blocksize = 0;  // kf_blocksize; 0: "auto", chosen by the memory plan (MemoryPlan.hpp)
  // With blocksize "auto": the plan's choice is at most this (0: any); set by decided(), not read.
  std::int64_t max_blocksize = 0;
  // kalman_lambda; when not given, kLambdaWithoutNoise, or kLambdaWithNoise with a force noise.
  double lambda0 = 0.98;
  double nu = 0.9987;  // kalman_nue
  double p0 = 0.0;     // initial covariance P_i = p0 I; 0: "auto", chosen at the start (AutoP0.hpp)
  // p0_shape: "identity" (P = p0 I), or P = p0 diag(d) with d from the first batches' gradients per weight
  // ("gradient") or per parameter tensor ("layer"): CovarianceShape.hpp.
  std::string p0_shape = "identity";
  // The diagonal of P stays at or below p_cap * p0 (docs/rlekf.md, "Bounded covariance"); 0 ("none"):
  // unbounded, as in DeePMD-kit.
  double p_cap = 1e4;
  int nselect = 24;   // atoms drawn per frame for the force steps
  int groupsize = 6;  // atoms per force Kalman step
  double start_pref_e = 1.0, limit_pref_e = 1.0;
  double start_pref_f = 1.0, limit_pref_f = 1.0;
  double start_pref_v = 0.0, limit_pref_v = 0.0;  // a virial step runs when either is non-zero
  std::string p_precision = "auto";  // covariance precision: float64, float32 or "auto" (memory plan)
  // A second energy update at the end of each step, on the weights the force (and virial) updates left, so
  // that a step never ends with the energy those updates disturbed (docs/rlekf.md, "Measurements of one
  // batch"). Not given ("auto"): on with kf_update "sequential" (DeePMD-kit's LKF has it), off with "joint",
  // whose one update takes the energy with the forces; given true with "joint", an energy update follows the
  // joint one.
  bool energy_last = true;
  // Frames of the training set, drawn anew each step, added to the batch's energy measurements: the filter
  // forgets old measurements (lambda < 1), and with them the energies of frames fitted many steps ago
  // (docs/rlekf.md, "Measurements of one batch"). 0: none; -1: "auto" (auto_energy_replay).
  int energy_replay = -1;
  bool log_filter = false;  // display lines also show the filter's diagnostics (KalmanDiagnostics)
  // kf_update: "joint" takes a step's measurements (energy, force groups, virial) on one model graph in one
  // Kalman update of m measurements (KalmanFilter::update_joint); "sequential" takes them one after another,
  // each on the weights the previous one left (DeePMD-kit's LKF). docs/rlekf.md, "Joint measurement update".
  // "auto" (the default) is decided by the model's size (decided() below, docs/rlekf.md "Which update").
  std::string update = "auto";
  // While update is "auto": the keys of the large-model settings (kLargeModelKeys) the input left out; the
  // decision sets only these, and to_json leaves them out so that reading it back keeps them unset.
  std::vector<std::string> unset;
  // How the gradient h = dy/dw of a force or virial measurement is taken (docs/rlekf.md, "Force gradients by
  // difference"): "graph", by a backward pass through the forces' graph (a double backward, as DeePMD-kit's
  // LKF); "difference", as a difference of energy gradients along the measurement's displacement
  // (DifferenceGradients.hpp: first-order passes only); "auto" (the default): "difference" for the joint
  // update measured in float64 (measure_precision below), "graph" otherwise (resolved by the training
  // step, force_gradient_for()).
  std::string force_gradient = "auto";
  // force_gradient with "auto" resolved for measurements in float64 or not (and this->update decided).
  std::string force_gradient_for(bool float64_measurements) const;
  // The precision the model is evaluated in for the filter's measurements, their predictions and gradients
  // (docs/rlekf.md, "Measurements in float32"): "float32", "float64" (needs a float64 model), or "auto"
  // (the default): float32 for the joint update of a float64 model with a float32 covariance, whose sweep
  // rounds the gradients to float32 anyway, else the model's own (resolved by the training step,
  // measure_precision_for()). The weights stay in the model's precision.
  std::string measure_precision = "auto";
  // measure_precision with "auto" resolved for a model of this precision (update and p_precision decided).
  std::string measure_precision_for(bool float64_model) const;
  // Relative measurement noise of force and virial measurements (AutoP0.hpp, auto_noise): a positive value
  // as given, 0: "auto" (chosen with p0 from the first batches); "none" (the default) is 1, every
  // measurement's noise L lambda as in DeePMD-kit.
  double force_noise = 1.0;
  double virial_noise = 1.0;
  // Noise by share (KalmanFilter::update_joint, docs/rlekf.md "Noise by share"): a value s in (0, 1) gives
  // that kind of measurement the noise q (1 / s - 1) at each update, q = h^T P h, so that it removes the
  // fraction s of its error whatever P has become; the relative noise above then has no effect on it.
  // 0 ("none"): the fixed noise.
  double energy_share = 0.0;
  double force_share = 0.0;
  double virial_share = 0.0;
  // share_decay T (steps): the shares above fall as s / (1 + t / T) at step t, halved at t = T, the 1/t of a
  // recursive average, so that late updates average over frames instead of chasing each one (docs/rlekf.md,
  // "Noise by share"). 0 ("none"): constant shares.
  double share_decay = 0.0;
  // share_rule: "exact", a share sets its measurement's noise (above); "cap", a share is the most its
  // measurement may remove: the noise is the larger of the fixed one (force_noise, ...) and the share's
  // (docs/rlekf.md, "Share cap").
  std::string share_rule = "exact";
  // share_growth T (steps, share_rule "cap" only): the caps rise as s (1 + t / T) and end once they reach 1,
  // handing the measurement over to its fixed noise. 0 ("none"): constant caps.
  double share_growth = 0.0;
  bool share_cap() const { return share_rule == "cap"; }
  // trust_radius r: each update's weight change is kept within |dw| <= r by raising the measurements'
  // noise (KalmanOptions::trust_radius; docs/rlekf.md, "Trust radius"). 0 ("none"): unbounded.
  double trust_radius = 0.0;
  // A share s as it applies at step t (steps done before it): s (1 + t / T_growth) / (1 + t / T_decay); a
  // cap that has reached 1 binds no more and becomes 0 (the fixed noise).
  double share_at(double s, std::int64_t step) const {
    const auto t = static_cast<double>(step);
    if (share_decay > 0.0) s /= 1.0 + t / share_decay;
    if (share_growth > 0.0) s *= 1.0 + t / share_growth;
    return s < 1.0 ? s : 0.0;
  }

  // kf_update "auto" decided; other settings are returned as they are. "joint" for a model of at least
  // kJointWeights weights, with the settings it was measured with where the input left them out: the
  // automatic force noise, trust_radius kJointTrustRadius, p0_shape kJointP0Shape from kShapeWeights weights
  // on, the forces of every atom of a frame in one measurement (nselect = groupsize = the training frames'
  // mean atom count, at least the default 24; one group of an nselect given), blocks of at most
  // kJointBlocksize in float32 (kf_blocksize and p_precision "auto"), kalman_lambda for the noise, no
  // energy_last. "sequential" otherwise, every default as before. `restored`: the update a checkpoint was
  // trained with (its kf_update; "" for a new run), kept so that a run goes on as it began.
  RlekfSettings decided(std::int64_t weights, double mean_frame_atoms,
                        const std::string& restored = "") const;

  // Every key read, with the sections it may be in: the "optimizer" section, or where DeePMD-kit's PyTorch
  // backend writes them (training.kf_blocksize, training.kalman_lambda, loss.kf_start_pref_e, ...).
  static const std::vector<OptionKey>& keys();
  // Reads and checks the settings; ConfigError naming the key, file and value.
  static RlekfSettings read(const OptimizerInput& in);
  // The "optimizer" section of a resolved input, every setting given ("type": "RLEKF").
  nlohmann::json to_json() const;
};

// energy_replay "auto": enough replayed frames that an energy measurement spans kReplayAtoms atoms with
// the batch's own, at most kMaxReplay: R = clamp(ceil(kReplayAtoms / frame_atoms - batch_frames), 0,
// kMaxReplay), frame_atoms and batch_frames the training set's means (frame-weighted). Small cells, whose
// energies a few frames pin down poorly, get 4; 192-atom water frames get none (there the replay doubled
// the step time and changed no error, docs/first-epoch.md).
// kalman_lambda when the input gives none. The forgetting factor raises P by up to exp((1 - lambda_0) /
// (1 - nu)) over a run: at 0.98 (DeePMD-kit's) that growth is what lets the force measurements learn when
// their noise is L lambda ("none"), and on top of the force noise it drives the force updates into
// overfitting (docs/first-epoch.md, "Joint update and force noise"); 0.999 grows P by at most e^0.77.
constexpr double kLambdaWithoutNoise = 0.98;
// kf_update "auto": the size from which the joint update with the large-model settings is the default, and
// those settings (docs/rlekf.md, "Which update by default").
constexpr std::int64_t kJointWeights = 50000;
constexpr double kJointTrustRadius = 1.0;
// From kShapeWeights weights on, the joint update's initial covariance is shaped per parameter tensor
// (p0_shape "layer"): measured ahead on DeePMD-kit's water model (1,014,182 weights, and 455,942 and
// 220,022 with smaller fitting nets) and behind on 44,033 (docs/rlekf.md, "Shape of the initial covariance").
constexpr std::int64_t kShapeWeights = 200000;
constexpr const char* kJointP0Shape = "layer";
constexpr std::int64_t kJointBlocksize = 1024;
constexpr double kLambdaWithNoise = 0.999;
constexpr double kReplayAtoms = 128.0;
constexpr int kMaxReplay = 4;
int auto_energy_replay(double frame_atoms, double batch_frames);

}  // namespace deepkf
