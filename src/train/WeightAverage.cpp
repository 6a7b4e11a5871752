#include "src/train/WeightAverage.hpp"

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

constexpr const char* kKey = "weight_average";

}  // namespace

WeightAverage::WeightAverage(const DeepPot& model, double decay) : decay_(decay) {
  torch::NoGradGuard no_grad;
  for (const auto& w : model->parameters()) average_.push_back(w.detach().clone());
}

void WeightAverage::update(const DeepPot& model) {
  torch::NoGradGuard no_grad;
  const auto weights = model->parameters();
  // lerp: a + (1 - d) (w - a) = d a + (1 - d) w
  for (std::size_t i = 0; i < average_.size(); ++i) average_[i].lerp_(weights[i].detach(), 1.0 - decay_);
}

void WeightAverage::save(torch::serialize::OutputArchive& archive) const {
  torch::serialize::OutputArchive a;
  a.write("decay", c10::IValue(decay_));
  for (std::size_t i = 0; i < average_.size(); ++i) a.write("w" + std::to_string(i), average_[i].cpu());
  archive.write(kKey, a);
}

bool WeightAverage::load(torch::serialize::InputArchive& archive, const std::string& path) {
  torch::serialize::InputArchive a;
  if (!archive.try_read(kKey, a)) return false;
  for (std::size_t i = 0; i < average_.size(); ++i) {
    torch::Tensor t;
    if (!a.try_read("w" + std::to_string(i), t) || !t.sizes().equals(average_[i].sizes())) {
      throw ModelError("checkpoint '" + path +
                       "': its average of the weights (enable_ema) does not fit the model");
    }
    torch::NoGradGuard no_grad;
    average_[i].copy_(t);
  }
  return true;
}

void WeightAverage::with_average(const DeepPot& model, const std::function<void()>& f) const {
  torch::NoGradGuard no_grad;
  auto weights = model->parameters();
  std::vector<torch::Tensor> live;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    live.push_back(weights[i].detach().clone());
    weights[i].detach().copy_(average_[i]);
  }
  const auto restore = [&] {
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i].detach().copy_(live[i]);
  };
  try {
    f();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

}  // namespace deepkf
