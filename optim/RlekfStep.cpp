#include "optim/RlekfStep.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "optim/CovarianceShape.hpp"
#include "optim/KalmanMeasurement.hpp"
#include "optim/PackedJointSweep.hpp"
#include "optim/RankSums.hpp"
#include "src/core/Error.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

namespace {

KalmanOptions kalman_options(const RlekfSettings& k) {
  KalmanOptions o;
  o.blocksize = k.blocksize;
  o.lambda0 = k.lambda0;
  o.nu = k.nu;
  o.p0 = k.p0 > 0.0 ? k.p0 : 1.0;  // "auto": set by prepare() before the first step
  o.p_cap = k.p_cap;
  o.trust_radius = k.trust_radius;
  o.p_dtype = k.p_precision == "float32" ? torch::kFloat32 : torch::kFloat64;
  return o;
}

// energy_replay with "auto" resolved from the training set (RlekfSettings.hpp).
int replay_frames_of(const RlekfSettings& s, const StepResources& resources) {
  return s.energy_replay >= 0 ? s.energy_replay
                              : auto_energy_replay(resources.mean_frame_atoms, resources.mean_batch_frames);
}

// The settings with the memory plan's choices, the replay's count and how force gradients are taken (for
// a model of `precision`), and when restoring an automatic p0, the checkpoint's value (P itself comes from
// the checkpoint; the value is what the resolved input reports).
RlekfSettings resolved(RlekfSettings s, const MemoryPlan& plan, const StepResources& resources,
                       torch::ScalarType precision) {
  s.blocksize = plan.blocksize;
  s.p_precision = plan.p_precision;
  s.energy_replay = replay_frames_of(s, resources);
  const bool float64_model = precision == torch::kFloat64;
  // A restored run measures and takes its gradients as it did (before measure_precision existed: in the
  // model's precision; before force_gradient: through the graph).
  if (s.measure_precision == "auto" && !resources.restored.is_null())
    s.measure_precision =
        resources.restored.value("measure_precision", std::string(float64_model ? "float64" : "float32"));
  s.measure_precision = s.measure_precision_for(float64_model);
  if (s.measure_precision == "float64" && !float64_model) {
    throw ConfigError(
        "optimizer: measure_precision \"float64\" needs a float64 model (the model's precision is float32): "
        "use \"float32\" or \"auto\"");
  }
  if (s.force_gradient == "auto" && !resources.restored.is_null())
    s.force_gradient = resources.restored.value("force_gradient", std::string("graph"));
  s.force_gradient = s.force_gradient_for(s.measure_precision == "float64");
  if (s.force_gradient == "difference" && s.measure_precision != "float64") {
    throw ConfigError(
        fmt::format("optimizer: force_gradient \"difference\" needs measurements in float64 (here {}, whose "
                    "differences of energy gradients lose too many digits): use \"graph\" or \"auto\"{}",
                    float64_model ? "measure_precision \"float32\"" : "a float32 model",
                    float64_model ? ", or measure_precision \"float64\"" : ""));
  }
  if (!resources.restored.is_null()) {
    // A checkpoint written before the measurement noise existed was trained with none (1).
    const auto restored = [&](const char* key, double fallback) {
      const auto v = resources.restored.value(key, nlohmann::json(fallback));
      return v.is_number() ? v.get<double>() : fallback;
    };
    if (s.p0 <= 0.0) s.p0 = restored("p0", 1.0);
    if (s.force_noise <= 0.0) s.force_noise = restored("force_noise", 1.0);
    if (s.virial_noise <= 0.0) s.virial_noise = restored("virial_noise", 1.0);
  }
  return s;
}

// Step inputs with their batches' geometry in `dtype` (geometry_in), holding the converted batches.
class GeometryIn {
 public:
  GeometryIn(const std::vector<StepInput>& given, torch::Dtype dtype) {
    locals_.reserve(given.size());
    for (const auto& in : given) locals_.push_back(geometry_in(in.local, dtype));
    for (std::size_t k = 0; k < given.size(); ++k) {
      const auto& in = given[k];
      inputs_.push_back(
          {locals_[k], in.info, in.global_frames, in.first_frame, in.step, {}, in.replay_frames});
      for (const auto& b : in.replay) inputs_.back().replay.push_back(geometry_in(b, dtype));
    }
  }
  GeometryIn(const GeometryIn&) = delete;
  GeometryIn& operator=(const GeometryIn&) = delete;
  const std::vector<StepInput>& inputs() const { return inputs_; }

 private:
  std::vector<Batch> locals_;  // what inputs_ refer to
  std::vector<StepInput> inputs_;
};

}  // namespace

RlekfSettings RlekfStep::decided(const RlekfSettings& s, const DeepPot& model,
                                 const StepResources& resources) {
  std::int64_t weights = 0;
  for (const auto& p : model->trainable_parameters()) weights += p.numel();
  const std::string restored =
      resources.restored.is_null() ? "" : resources.restored.value("kf_update", std::string("sequential"));
  return s.decided(weights, resources.mean_frame_atoms, restored);
}

std::string RlekfStep::describe_update(const RlekfSettings& s, bool chosen) {
  std::string text = fmt::format("kf_update \"{}\"", s.update);
  if (chosen && s.update == "joint") {
    text += fmt::format(
        " (chosen for a model of at least {} weights: force_noise {}, trust_radius {:g}, p0_shape {}, "
        "nselect {}, groupsize {}; docs/rlekf.md)",
        kJointWeights, s.force_noise <= 0.0 ? "auto" : fmt::format("{:g}", s.force_noise), s.trust_radius,
        s.p0_shape, s.nselect, s.groupsize);
  } else if (chosen) {
    text += fmt::format(" (chosen for a model under {} weights)", kJointWeights);
  }
  return text;
}

MemoryPlan RlekfStep::plan(const RlekfSettings& asked, const DeepPot& model, int nranks,
                           const StepResources& resources) {
  return plan_decided(decided(asked, model, resources), model, nranks, resources);
}

MemoryPlan RlekfStep::plan_decided(const RlekfSettings& settings, const DeepPot& model, int nranks,
                                   const StepResources& resources) {
  std::int64_t blocksize = settings.blocksize;
  std::string precision = settings.p_precision;
  if (!resources.restored.is_null()) {
    // Restoring: what the input leaves to "auto" is what the checkpoint used (before checkpoints recorded
    // it, the then fixed defaults 5120 and float64).
    if (blocksize == 0)
      blocksize = resources.restored.value("kf_blocksize", nlohmann::json(5120)).get<std::int64_t>();
    if (precision == "auto") precision = resources.restored.value("p_precision", std::string("float64"));
  }
  MemoryNeed need;
  const auto params = model->trainable_parameters();
  for (const auto& p : params) need.shapes.push_back(p.sizes().vec());
  need.value_bytes = static_cast<std::int64_t>(params.front().element_size());
  // The largest graph at once: the batch's forces, or the energies of the batch and the replayed frames.
  need.batch_bytes =
      std::max(resources.batch_bytes, (resources.batch_frames + replay_frames_of(settings, resources)) *
                                          resources.frame_energy_bytes);
  need.nranks = nranks;
  if (settings.update == "joint") {
    need.measurements = 1 + (settings.nselect + settings.groupsize - 1) / settings.groupsize +
                        (settings.start_pref_v > 0.0 || settings.limit_pref_v > 0.0 ? 1 : 0);
  }
  need.available = resources.available;
  need.where = resources.where;
  return plan_memory(need, blocksize, precision, settings.max_blocksize);
}

RlekfStep::RlekfStep(const RlekfSettings& settings, const StepConfig& cfg, DeepPot model,
                     std::shared_ptr<Communicator> comm, const StepResources& resources)
    : RlekfStep(decided(settings, model, resources), settings.update == "auto", cfg, model, std::move(comm),
                resources) {}

RlekfStep::RlekfStep(const RlekfSettings& settings, bool chosen, const StepConfig& cfg, const DeepPot& model,
                     std::shared_ptr<Communicator> comm, const StepResources& resources)
    : plan_(plan_decided(settings, model, comm->size(), resources)),
      update_chosen_(chosen),
      options_(resolved(settings, plan_, resources, model->config().precision)),
      numb_steps_(cfg.numb_steps),
      model_(model),
      params_(model_->trainable_parameters()),
      measured_(options_.measure_precision == model->config().precision_name()
                    ? model_
                    : model_in_precision(model_, options_.measure_precision == "float32" ? torch::kFloat32
                                                                                         : torch::kFloat64)),
      measured_params_(measured_->trainable_parameters()),
      comm_(std::move(comm)),
      filter_(params_, kalman_options(options_), comm_),
      selector_(cfg.seed, options_.nselect, options_.groupsize),
      auto_p0_(options_.p0 <= 0.0),
      timing_(params_.front().device()) {
  // A joint update takes the energy, every force group and the virial at once.
  const int measurements = 1 + selector_.num_groups() + 1;
  if (options_.update == "joint" && measurements > packed::kMaxJoint) {
    throw ConfigError(fmt::format(
        "optimizer: kf_update \"joint\" takes at most {} measurements a step; nselect {} in groups of {} "
        "gives {} force groups (with the energy and a virial, {}): raise groupsize or use kf_update "
        "\"sequential\"",
        packed::kMaxJoint, options_.nselect, options_.groupsize, selector_.num_groups(), measurements));
  }
}

std::string RlekfStep::describe() const {
  return fmt::format(
      "optimizer RLEKF: {} in {} blocks, {}, measured in {}, force gradients {}, {} replayed frames per "
      "energy update; {}",
      model_->trained_text(), filter_.layout().num_blocks(), describe_update(options_, update_chosen_),
      options_.measure_precision,
      options_.force_gradient == "difference" ? "by difference" : "through the graph", options_.energy_replay,
      plan_.describe());
}

void RlekfStep::sync_measured() {
  if (measures_copy()) copy_model_values(model_, measured_);
}

ErrorMetrics RlekfStep::take(const StepInput& in) {
  sync_measured();
  if (!measures_copy()) return take_measured(in);
  const GeometryIn converted({in}, measured_->config().precision);
  return take_measured(converted.inputs().front());
}

ErrorMetrics RlekfStep::take_measured(const StepInput& in) {
  if (options_.update == "joint") return take_joint(in);
  const Batch& b = in.local;
  const SystemInfo& info = in.info;
  const Prefactors pref = prefactors(in.step);
  timing_.begin_step();

  auto update = [&](Measured m, std::int64_t frames, double share) {
    update_one(sum_measured({std::move(m)}, {frames}), options_.share_at(share, in.step));
  };
  const std::int64_t energy_frames = in.global_frames + in.replay_frames;

  // Energy measurement on the current weights.
  update({energy_of(in, pref.energy), {}}, energy_frames, options_.energy_share);
  // Force measurements: groups of selected atoms, each on the weights updated by the step before.
  if (info.has_force && pref.force > 0.0) {
    // Every rank draws for the whole global batch and keeps its own frames' rows.
    const auto groups = selector_.select(in.first_frame, b.coord.size(0), in.global_frames, info.natoms,
                                         params_.front().device());
    for (const auto& atoms : groups)
      update(force_measured(in, atoms, pref.force), in.global_frames, options_.force_share);
  }
  // Virial measurement when asked for and present.
  if (info.has_virial && pref.virial > 0.0)
    update(virial_measured(in, pref.virial), in.global_frames, options_.virial_share);
  // The force and virial updates move the energy too (most of all its per-atom offset, which they do not
  // see): measure it again on the weights the step leaves.
  if (options_.energy_last) update({energy_of(in, pref.energy), {}}, energy_frames, options_.energy_share);
  timing_.end_step();
  return {};
}

void RlekfStep::update_one(const SummedMeasurements& s, double share) {
  timing_.begin_filter();
  if (share > 0.0)
    filter_.update_joint(s.e, s.grads, {share}, options_.share_cap());
  else
    filter_.update(s.e.front(), s.grads.front());
  timing_.end_filter();
  sync_measured();  // the next measurement sees the updated weights
}

std::string RlekfStep::prepare(const std::vector<StepInput>& first) {
  sync_measured();
  if (!measures_copy()) return prepare_measured(first);
  const GeometryIn converted(first, measured_->config().precision);
  return prepare_measured(converted.inputs());
}

std::string RlekfStep::prepare_measured(const std::vector<StepInput>& first) {
  // The first batches' measurements as the first steps will take them, without advancing the atom draws.
  AtomSelector draws = selector_;
  using Gradients = std::vector<torch::Tensor>;
  std::vector<Gradients> energy, force, virial;
  for (const auto& in : first) {
    const Prefactors pref = prefactors(in.step);
    energy.push_back(gradients(energy_of(in, pref.energy)));
    if (!in.info.has_force || pref.force <= 0.0) continue;
    const auto groups = draws.select(in.first_frame, in.local.coord.size(0), in.global_frames, in.info.natoms,
                                     params_.front().device());
    // The first group of each batch: the groups of a batch are alike, and one keeps the probe cheap.
    force.push_back(gradients(force_of(in, groups.front(), pref.force)));
  }
  for (const auto& in : first) {
    const Prefactors pref = prefactors(in.step);
    if (!in.info.has_virial || pref.virial <= 0.0) continue;
    virial.push_back(gradients(virial_of(in, pref.virial)));
  }
  // A shaped covariance's d, and each measurement's h^T diag(d) h: what |h|^2 is for P = p0 I.
  const auto& layout = filter_.layout();
  const bool shaped = options_.p0_shape != "identity";
  torch::Tensor shape;
  if (shaped) {
    std::vector<Gradients> all = energy;
    all.insert(all.end(), force.begin(), force.end());
    all.insert(all.end(), virial.begin(), virial.end());
    shape = covariance_shape(options_.p0_shape, all, layout);
  }
  const auto weighted_norm = [&](const Gradients& grads) {
    double s = 0.0;
    if (!shaped) {
      for (const auto& t : grads) s += t.to(torch::kFloat64).pow(2).sum().item<double>();
      return s;
    }
    const auto h = layout.gather(grads, torch::kFloat64).to(torch::kCPU);
    return h.square().dot(shape).item<double>();
  };
  GradientScales g;
  for (const auto& x : energy) g.energy.push_back(weighted_norm(x));
  for (const auto& x : force) g.force.push_back(weighted_norm(x));
  for (const auto& x : virial) g.virial.push_back(weighted_norm(x));
  // Noise "auto" (0) from the typical |h|^2 of each kind (AutoP0.hpp).
  const P0Choice typical = evaluate_p0(1.0, g, 1, 1.0);
  if (options_.force_noise <= 0.0) options_.force_noise = auto_noise(typical.g_force, typical.g_energy);
  if (options_.virial_noise <= 0.0) options_.virial_noise = auto_noise(typical.g_virial, typical.g_energy);
  const auto blocks = layout.num_blocks();
  if (!auto_p0_) {
    if (shaped) filter_.set_p0(options_.p0, shape);
    return evaluate_p0(options_.p0, g, blocks, options_.lambda0, options_.force_noise, options_.virial_noise)
        .describe(false);
  }
  const P0Choice choice = choose_p0(g, blocks, options_.lambda0, options_.force_noise, options_.virial_noise);
  options_.p0 = choice.p0;
  if (shaped)
    filter_.set_p0(options_.p0, shape);
  else
    filter_.set_p0(options_.p0);
  auto_p0_ = false;
  return choice.describe(true);
}

std::string RlekfStep::status_line(std::int64_t) {
  std::string line = fmt::format("lambda {:.6g}", filter_.lambda());
  if (!options_.log_filter) return line;
  const KalmanDiagnostics d = filter_.take_diagnostics();  // collective
  line += fmt::format("  filter: {} updates, e^2/a {:.3g}, |dw| {:.3g}, tr(P)/N {:.3g}, capped {}", d.updates,
                      d.mean_nis, d.rms_step, d.mean_p_diag, d.capped);
  // Joint updates: each measurement's share (energy, force groups, virial, in the step's order).
  if (!d.mean_share.empty()) {
    line += ", shares";
    for (const double share : d.mean_share) line += fmt::format(" {:.3g}%", 100.0 * share);
  }
  if (options_.trust_radius > 0.0)
    line += fmt::format(", damped {} (free |dw| {:.3g})", d.damped, d.rms_free_step);
  const std::string time = describe_step_time(timing_.take_recent());
  return time.empty() ? line : line + "  time: " + time;
}

void RlekfStep::save(torch::serialize::OutputArchive& archive) {
  filter_.save_state(archive);
  selector_.save(archive);
}

std::vector<std::int64_t> RlekfStep::block_sizes() const {
  std::vector<std::int64_t> sizes;
  for (const auto& b : filter_.layout().blocks()) sizes.push_back(b.size());
  return sizes;
}

void RlekfStep::load(torch::serialize::InputArchive& archive, const BlockSource& read_block) {
  filter_.load(archive, read_block);  // each rank reads its own blocks
  selector_.load(archive);
}

}  // namespace deepkf
