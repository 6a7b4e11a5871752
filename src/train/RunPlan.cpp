#include "src/train/RunPlan.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "optim/Optimizers.hpp"
#include "src/core/Communicator.hpp"
#include "src/model/DeepPot.hpp"
#include "src/train/DataSetup.hpp"
#include "src/train/TrainingDevice.hpp"

namespace deepkf {

std::string plan_training_run(const std::string& input_path, int nranks, int ranks_per_node) {
  const TrainConfig cfg = TrainConfig::from_file(input_path);
  const auto comm = make_serial_communicator();
  // The set-up's own messages (data, sel) are not part of the plan.
  spdlog::logger quiet("plan");
  const TrainingData data = open_training_data(cfg, *comm, quiet);
  ModelConfig mcfg = ModelConfig::from_json(cfg.model, cfg.file);
  resolve_sel(mcfg, data.train, *comm, quiet);
  mcfg.validate();
  const DeepPot model(mcfg);
  const torch::Device device = training_device(cfg, *comm);
  const int per_node = ranks_per_node > 0 ? ranks_per_node : nranks;
  const StepResources res = step_resources(device, available_memory(device, per_node), nranks, data, mcfg);
  return fmt::format("{}: {}, {} on {} rank{} ({} per node)\n{}", input_path, model->trained_text(),
                     cfg.optimizer, nranks, nranks > 1 ? "s" : "", per_node,
                     plan_training_step(cfg.step(), model, nranks, res));
}

}  // namespace deepkf
