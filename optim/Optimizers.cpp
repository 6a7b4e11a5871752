#include "optim/Optimizers.hpp"

#include <algorithm>

#include "optim/AdamSettings.hpp"
#include "optim/AdamStep.hpp"
#include "optim/RlekfSettings.hpp"
#include "optim/RlekfStep.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// The resolved settings (an "optimizer" section), read back through the optimizer's own reader.
template <typename Settings>
Settings settings_of(const StepConfig& cfg) {
  const nlohmann::json doc = {{"optimizer", cfg.settings}};
  return Settings::read(OptimizerInput(doc, cfg.file));
}

struct Entry {
  std::string name;
  const std::vector<OptionKey>& (*keys)();
  nlohmann::json (*resolve)(const OptimizerInput&);
  std::string (*plan)(const StepConfig&, const DeepPot&, int, const StepResources&);
  std::unique_ptr<TrainingStep> (*make)(const StepConfig&, DeepPot, std::shared_ptr<Communicator>,
                                        const StepResources&);
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> all = {
      {"RLEKF", &RlekfSettings::keys,
       [](const OptimizerInput& in) { return RlekfSettings::read(in).to_json(); },
       [](const StepConfig& cfg, const DeepPot& model, int nranks, const StepResources& res) {
         const auto asked = settings_of<RlekfSettings>(cfg);
         return RlekfStep::describe_update(RlekfStep::decided(asked, model, res), asked.update == "auto") +
                "\n" + RlekfStep::plan(asked, model, nranks, res).describe();
       },
       [](const StepConfig& cfg, DeepPot model, std::shared_ptr<Communicator> comm,
          const StepResources& res) -> std::unique_ptr<TrainingStep> {
         return std::make_unique<RlekfStep>(settings_of<RlekfSettings>(cfg), cfg, std::move(model),
                                            std::move(comm), res);
       }},
      {"Adam", &AdamSettings::keys, [](const OptimizerInput& in) { return AdamSettings::read(in).to_json(); },
       [](const StepConfig&, const DeepPot& model, int, const StepResources& res) {
         return AdamStep::plan(model, res);
       },
       [](const StepConfig& cfg, DeepPot model, std::shared_ptr<Communicator> comm,
          const StepResources& res) -> std::unique_ptr<TrainingStep> {
         return std::make_unique<AdamStep>(settings_of<AdamSettings>(cfg), cfg, std::move(model),
                                           std::move(comm), res);
       }}};
  return all;
}

const Entry& entry(const std::string& name) {
  for (const auto& e : registry()) {
    if (e.name == name) return e;
  }
  throw ConfigError("no optimizer named '" + name + "'");
}

bool reads(const Entry& e, const std::string& section, const std::string& key) {
  return std::any_of(e.keys().begin(), e.keys().end(), [&](const OptionKey& k) {
    return k.key == key && std::find(k.sections.begin(), k.sections.end(), section) != k.sections.end();
  });
}

}  // namespace

std::string optimizer_name(const std::string& raw, const std::string& path, const std::string& file) {
  if (raw == "RLEKF" || raw == "rlekf" || raw == "LKF" || raw == "lkf") return "RLEKF";
  if (raw == "Adam" || raw == "adam") return "Adam";
  throw ConfigError("'" + path + "' in " + file + " is \"" + raw +
                    "\": use \"RLEKF\" (DeePMD-kit's \"LKF\") or \"Adam\"");
}

std::vector<std::string> optimizer_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const auto& e : registry()) {
    for (const auto& k : e.keys()) {
      if (reads(e, section, k.key) && std::find(keys.begin(), keys.end(), k.key) == keys.end())
        keys.push_back(k.key);
    }
  }
  return keys;
}

nlohmann::json resolve_optimizer_settings(const std::string& name, const OptimizerInput& in,
                                          std::vector<std::string>& unused) {
  const Entry& chosen = entry(name);
  for (const auto& other : registry()) {
    if (other.name == name) continue;
    for (const auto& k : other.keys()) {
      for (const auto& section : k.sections) {
        const auto& s = in.section(section);
        if (s.is_object() && s.contains(k.key) && !reads(chosen, section, k.key))
          unused.push_back(section + "." + k.key);
      }
    }
  }
  return chosen.resolve(in);
}

std::string plan_training_step(const StepConfig& cfg, const DeepPot& model, int nranks,
                               const StepResources& resources) {
  return entry(cfg.optimizer).plan(cfg, model, nranks, resources);
}

RlekfSettings decided_rlekf_settings(const StepConfig& cfg, std::int64_t weights, double mean_frame_atoms) {
  return settings_of<RlekfSettings>(cfg).decided(weights, mean_frame_atoms);
}

int kalman_updates_per_step(const StepConfig& cfg, bool virials, std::int64_t weights) {
  if (cfg.optimizer != "RLEKF") return 0;
  const RlekfSettings s = decided_rlekf_settings(cfg, weights, 0.0);
  if (s.update == "joint") return 1 + (s.energy_last ? 1 : 0);
  const int force_groups = (s.nselect + s.groupsize - 1) / s.groupsize;
  const bool virial = virials && (s.start_pref_v > 0.0 || s.limit_pref_v > 0.0);
  return 1 + force_groups + (virial ? 1 : 0) + (s.energy_last ? 1 : 0);
}

std::unique_ptr<TrainingStep> make_training_step(const StepConfig& cfg, DeepPot model,
                                                 std::shared_ptr<Communicator> comm,
                                                 const StepResources& resources) {
  return entry(cfg.optimizer).make(cfg, std::move(model), std::move(comm), resources);
}

}  // namespace deepkf
