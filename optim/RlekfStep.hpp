#pragma once
// RLEKF's training step (docs/rlekf.md, "Measurements of one batch"): an energy measurement, force
// measurements on groups of seeded-random atoms, and the virial when asked for. kf_update "joint" takes
// them all on one model graph in one Kalman update of m measurements; "sequential" takes them one after
// another, each a Kalman update of the weights as the previous one left them (and energy_last a second
// energy update at the end).
#include <memory>

#include "optim/AtomSelector.hpp"
#include "optim/AutoP0.hpp"
#include "optim/KalmanFilter.hpp"
#include "optim/KalmanMeasurement.hpp"
#include "optim/MemoryPlan.hpp"
#include "optim/RankSums.hpp"
#include "optim/RlekfSettings.hpp"
#include "optim/StepTiming.hpp"
#include "optim/TrainingStep.hpp"

namespace deepkf {

class RlekfStep final : public TrainingStep {
 public:
  // `cfg` gives the run's length (the prefactor schedules) and seed (the atom selection).
  // The covariance's kf_blocksize and precision, where "auto", come from the memory plan (MemoryPlan.hpp)
  // or, when restoring, from the checkpoint; ResourceError when they do not fit.
  RlekfStep(const RlekfSettings& settings, const StepConfig& cfg, DeepPot model,
            std::shared_ptr<Communicator> comm, const StepResources& resources);

  std::string name() const override { return "RLEKF"; }
  // The memory plan this step would make (ResourceError when nothing asked for fits), without allocating.
  static MemoryPlan plan(const RlekfSettings& settings, const DeepPot& model, int nranks,
                         const StepResources& resources);
  // kf_update "auto" decided for this model and training set (RlekfSettings::decided), or as the checkpoint
  // being restored was trained.
  static RlekfSettings decided(const RlekfSettings& settings, const DeepPot& model,
                               const StepResources& resources);
  // "kf_update \"joint\" (chosen for a model of at least ... weights: ...)" for the log and deepkf plan;
  // `chosen`: the input left kf_update to "auto".
  static std::string describe_update(const RlekfSettings& decided, bool chosen);

  std::string describe() const override;
  nlohmann::json settings() const override { return options_.to_json(); }
  ErrorMetrics take(const StepInput& in) override;
  // p0 "auto": chooses p0 from the gradients of the first batches' measurements (AutoP0.hpp).
  std::string prepare(const std::vector<StepInput>& first) override;
  bool batch_errors() const override { return false; }
  int replay_frames() const override { return options_.energy_replay; }
  std::string status_name() const override { return "lambda"; }
  double status_value(std::int64_t) const override { return filter_.lambda(); }
  // "lambda 0.99", and with log_filter the filter's diagnostics and the step's time since the last display.
  std::string status_line(std::int64_t step) override;
  std::string time_summary() const override { return describe_step_time(timing_.total()); }
  std::int64_t covariance_bytes() const override { return filter_.covariance_bytes(); }
  KalmanFilter* weight_covariance() override { return &filter_; }

  void save(torch::serialize::OutputArchive& archive) override;
  std::vector<std::int64_t> block_sizes() const override;
  torch::ScalarType block_dtype() const override { return filter_.options().p_dtype; }
  void stream_blocks(const BlockSink& sink) override { filter_.stream_covariance(sink); }
  void load(torch::serialize::InputArchive& archive, const BlockSource& read_block) override;
  bool begin_journal() override { return filter_.begin_journal(); }
  std::int64_t copy_block(std::int64_t i, void* into) const override { return filter_.copy_block(i, into); }
  CovarianceJournal end_journal() override { return filter_.end_journal(); }
  std::int64_t journal_bytes() const override { return filter_.journal_bytes(); }

 private:
  struct Prefactors {
    double energy, force, virial;
  };
  Prefactors prefactors(std::int64_t step) const;
  // measure_precision other than the model's: measured_ is a copy of model_ in it, whose weights follow
  // model_'s (sync_measured() before every measurement), and a step's batches are converted to it.
  bool measures_copy() const { return measured_.ptr() != model_.ptr(); }
  void sync_measured();
  // take() and prepare() on batches in the measuring precision.
  ErrorMetrics take_measured(const StepInput& in);
  std::string prepare_measured(const std::vector<StepInput>& first);
  torch::Tensor natoms(const Batch& b) const;  // [B] atoms per frame of this rank's frames
  // The measurements on the current weights (undefined y when this rank has no frames of the batch). The
  // energy's includes the replayed frames.
  // local_energy: this rank's frames' energies [B] with their graph when already evaluated (the joint
  // step's forward pass), else undefined and evaluated here.
  Measurement energy_of(const StepInput& in, double pe, const torch::Tensor& local_energy = {});
  Measurement force_of(const StepInput& in, const torch::Tensor& atoms, double pf);
  // The same from the model's output `out` for this rank's frames b (one graph for every group).
  Measurement force_of(const Batch& b, const ModelOutput& out, const torch::Tensor& atoms, double pf) const;
  // The virial measurement on the current weights (undefined y when this rank has no frames).
  Measurement virial_of(const StepInput& in, double pv);
  // The measurement with relative noise rho (RlekfSettings::force_noise): y and its error pieces / sqrt(rho).
  static Measurement with_noise(Measurement m, double rho);
  // A measurement with its noise, and with force_gradient "difference" this rank's gradient h of it, taken
  // without the forces' graph (DifferenceGradients.hpp); h empty: taken from y's graph when summed.
  struct Measured {
    Measurement m;
    std::vector<torch::Tensor> h;
  };
  // The model on this rank's frames b as force and virial measurements need it: the forces' graph
  // (force_gradient "graph") or the energy gradient beside forces without graph ("difference").
  // `energy_gradient`: the energy measurement takes its gradient from the forces' pass as well
  // (energy_from_forces_pass).
  ModelOutput evaluate_for_forces(const Batch& b, bool energy_gradient = false);
  // One local frame and none replayed: the energy measurement y = a E, so h = a dE/dw, the gradient the
  // forces' backward pass can give.
  static bool energy_from_forces_pass(const StepInput& in) {
    return in.local.coord.size(0) == 1 && in.replay.empty();
  }
  // The energy measurement on `out` (evaluate_for_forces, or empty: the energies evaluated here).
  Measured energy_measured(const StepInput& in, double pe, const ModelOutput& out);
  // Force and virial measurements from `out` of this rank's frames b, or from their own evaluation.
  Measured force_measured(const Batch& b, const ModelOutput& out, const torch::Tensor& atoms, double pf);
  Measured force_measured(const StepInput& in, const torch::Tensor& atoms, double pf);
  Measured virial_measured(const Batch& b, const ModelOutput& out, double pv);
  Measured virial_measured(const StepInput& in, double pv);
  // sum_measurements (RankSums.hpp) of measurements with the gradients they carry. Collective.
  SummedMeasurements sum_measured(std::vector<Measured> measured, const std::vector<std::int64_t>& frames);
  // kf_update "joint": every measurement of the step in one Kalman update (KalmanFilter::update_joint).
  ErrorMetrics take_joint(const StepInput& in);
  // The constructor's work, with kf_update decided once (`chosen`: the input left it to "auto").
  RlekfStep(const RlekfSettings& settings, bool chosen, const StepConfig& cfg, const DeepPot& model,
            std::shared_ptr<Communicator> comm, const StepResources& resources);
  // plan() for settings already decided.
  static MemoryPlan plan_decided(const RlekfSettings& settings, const DeepPot& model, int nranks,
                                 const StepResources& resources);
  // One measurement, summed over ranks, taken in one update: by its share where it has one (share at the
  // step already applied), else as a scalar update.
  void update_one(const SummedMeasurements& s, double share);
  // dy/dw summed over ranks (RankSums.hpp). Collective.
  std::vector<torch::Tensor> gradients(const Measurement& m) const;

  MemoryPlan plan_;
  bool update_chosen_;     // kf_update "auto" was decided here (describe() says how)
  RlekfSettings options_;  // with the plan's kf_blocksize and p_precision
  std::int64_t numb_steps_;
  DeepPot model_;
  std::vector<torch::Tensor> params_;           // model_'s trainable weights: what the filter updates
  DeepPot measured_;                            // the model the measurements evaluate: model_ or its copy
  std::vector<torch::Tensor> measured_params_;  // measured_'s trainable weights: what h is taken for
  std::shared_ptr<Communicator> comm_;
  KalmanFilter filter_;
  AtomSelector selector_;
  bool auto_p0_ = false;  // p0 "auto" in a new run: prepare() chooses it
  StepTiming timing_;
};

}  // namespace deepkf
