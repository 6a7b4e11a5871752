#include "src/train/TrainingStep.hpp"

#include "src/core/Error.hpp"
#include "src/train/AdamStep.hpp"
#include "src/train/RlekfStep.hpp"

namespace deepkf {

std::unique_ptr<TrainingStep> make_training_step(const TrainConfig& cfg, DeepPot model,
                                                 std::shared_ptr<Communicator> comm) {
  // TrainConfig has normalised the name ("LKF", "RLEKF", "lkf" ... -> "LKF").
  if (cfg.optimizer == "LKF") return std::make_unique<RlekfStep>(cfg, std::move(model), std::move(comm));
  if (cfg.optimizer == "Adam") return std::make_unique<AdamStep>(cfg, std::move(model), std::move(comm));
  throw ConfigError("optimizer '" + cfg.optimizer + "' in " + cfg.file +
                    " is not \"LKF\" (RLEKF) or \"Adam\"");
}

}  // namespace deepkf
