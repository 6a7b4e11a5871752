#include "src/train/CheckpointCovariance.hpp"

#include <torch/torch.h>

#include "optim/Optimizers.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

std::unique_ptr<KalmanFilter> checkpoint_covariance(LoadedCheckpoint& ckpt, const std::string& path,
                                                    std::shared_ptr<Communicator> comm) {
  const std::string written =
      optimizer_name(ckpt.meta.value("optimizer", std::string("?")), "optimizer", path);
  if (written != "RLEKF" || !ckpt.covariance_block)
    throw ConfigError(
        "checkpoint '" + path + "' was trained with " + written +
        " and holds no covariance of its weights: the Kalman uncertainty needs a checkpoint of an "
        "RLEKF run (an ensemble's deviation needs only model files: -m A.pt -m B.pt ...)");
  // The layout and precision the checkpoint's blocks were written with (before checkpoints recorded them,
  // the then fixed 5120 and float64).
  const auto settings = ckpt.meta.value("optimizer_settings", nlohmann::json::object());
  KalmanOptions options;
  const auto blocksize = settings.value("kf_blocksize", nlohmann::json(5120));
  options.blocksize = blocksize.is_number_integer() ? blocksize.get<std::int64_t>() : 5120;
  options.p_dtype =
      settings.value("p_precision", std::string("float64")) == "float32" ? torch::kFloat32 : torch::kFloat64;
  auto filter = std::make_unique<KalmanFilter>(ckpt.model->trainable_parameters(), options, std::move(comm));
  try {
    filter->load(ckpt.optimizer, ckpt.covariance_block);
  } catch (const OptimError& e) {
    throw ModelError("checkpoint '" + path + "': " + e.what());
  }
  return filter;
}

}  // namespace deepkf
