#pragma once
// Adam's training step: one gradient step per batch on DeePMD-kit's "ener" loss, with DeePMD-kit's learning
// rate and prefactor schedules (optim/AdamTrainer.hpp, optim/EnerLoss.hpp).
#include <memory>

#include "optim/AdamSettings.hpp"
#include "optim/AdamTrainer.hpp"
#include "optim/TrainingStep.hpp"

namespace deepkf {

class AdamStep final : public TrainingStep {
 public:
  // `cfg` gives the run's length (the schedules).
  AdamStep(const AdamSettings& settings, const StepConfig& cfg, DeepPot model,
           std::shared_ptr<Communicator> comm, const StepResources& resources);

  std::string name() const override { return "Adam"; }
  // "memory: ... per rank, ... available" for Adam's state and one batch; ResourceError when it does not fit.
  static std::string plan(const DeepPot& model, const StepResources& resources);

  std::string describe() const override;
  nlohmann::json settings() const override { return options_.to_json(); }
  ErrorMetrics take(const StepInput& in) override;
  bool batch_errors() const override { return true; }
  std::string status_name() const override { return "lr"; }
  double status_value(std::int64_t step) const override { return adam_.learning_rate(step); }

  void save(torch::serialize::OutputArchive& archive) override { adam_.save(archive); }
  void load(torch::serialize::InputArchive& archive, const BlockSource&) override { adam_.load(archive); }

 private:
  AdamSettings options_;
  DeepPot model_;
  std::vector<torch::Tensor> params_;
  std::shared_ptr<Communicator> comm_;
  AdamTrainer adam_;
};

}  // namespace deepkf
