#include "optim/Optimizer.hpp"

#include <torch/torch.h>

#include "optim/AdamTrainer.hpp"
#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

KalmanFilter& Optimizer::as_kalman() {
  auto* k = dynamic_cast<KalmanFilter*>(this);
  if (!k) throw OptimError("optimizer " + name() + " is not a Kalman filter");
  return *k;
}

AdamTrainer& Optimizer::as_adam() {
  auto* a = dynamic_cast<AdamTrainer*>(this);
  if (!a) throw OptimError("optimizer " + name() + " is not Adam");
  return *a;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const std::vector<torch::Tensor>& params,
                                          const KalmanOptions& kalman, const AdamOptions& adam,
                                          std::shared_ptr<Communicator> comm) {
  if (name == "LKF" || name == "RLEKF")
    return std::make_unique<KalmanFilter>(params, kalman, std::move(comm));
  if (name == "Adam") return std::make_unique<AdamTrainer>(params, adam);
  throw ConfigError("optimizer \"" + name + "\" is unknown: use \"LKF\" (or \"RLEKF\") or \"Adam\"");
}

}  // namespace deepkf
