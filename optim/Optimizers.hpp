#pragma once
// The optimizers deepkf trains with: the names an input file may use for them, the keys each reads (their
// own files hold the rest: RlekfSettings, AdamSettings), and the training step each makes.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optim/OptimizerInput.hpp"
#include "optim/RlekfSettings.hpp"
#include "optim/TrainingStep.hpp"

namespace deepkf {

// "RLEKF" for "RLEKF", "rlekf" and DeePMD-kit's "LKF"/"lkf"; "Adam" for "Adam"/"adam". ConfigError naming
// `path` (the key it came from) and `file` for anything else.
std::string optimizer_name(const std::string& raw, const std::string& path, const std::string& file);

// Every key some optimizer reads from the section at dotted path `section` (for the unknown-key check).
std::vector<std::string> optimizer_keys(const std::string& section);

// The settings of optimizer `name` read from the input, every default filled in, as the "optimizer"
// section of a resolved input. Keys only other optimizers read are appended to `unused` ("loss.start_lr").
nlohmann::json resolve_optimizer_settings(const std::string& name, const OptimizerInput& in,
                                          std::vector<std::string>& unused);

// The memory plan of the step cfg.optimizer names, without allocating it, after RLEKF's update as kf_update
// "auto" decides it (a line each); ResourceError when it does not fit (`deepkf plan`).
std::string plan_training_step(const StepConfig& cfg, const DeepPot& model, int nranks,
                               const StepResources& resources);

// The Kalman filter updates one RLEKF training step makes on a batch with forces (and virials, when
// `virials`), from cfg.settings: with kf_update "sequential", the energy, one per force group
// (ceil(nselect / groupsize)), the virial when a virial prefactor is not 0, and the energy again with
// energy_last (6 at the defaults); with "joint", 1, and 2 with energy_last. 0 for Adam. kf_update "auto" is
// decided for a model of `weights` weights (RlekfSettings::decided).
int kalman_updates_per_step(const StepConfig& cfg, bool virials, std::int64_t weights);

// RLEKF's settings from cfg.settings with kf_update "auto" decided for a model of `weights` weights trained
// on frames of `mean_frame_atoms` atoms (RlekfSettings::decided; a new run).
RlekfSettings decided_rlekf_settings(const StepConfig& cfg, std::int64_t weights, double mean_frame_atoms);

// The step cfg.optimizer names, with cfg.settings, over `model`'s parameters. ResourceError when
// what it needs does not fit in `resources`.
std::unique_ptr<TrainingStep> make_training_step(const StepConfig& cfg, DeepPot model,
                                                 std::shared_ptr<Communicator> comm,
                                                 const StepResources& resources = {});

}  // namespace deepkf
