#include "optim/AdamTrainer.hpp"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "src/core/Error.hpp"

namespace deepkf {

AdamTrainer::AdamTrainer(std::vector<torch::Tensor> params, const AdamOptions& options)
    : params_(std::move(params)), options_(options) {
  if (params_.empty()) throw OptimError("adam optimizer: no trainable parameters");
  if (!(options_.start_lr > 0.0) || !(options_.stop_lr > 0.0)) {
    throw ConfigError("adam optimizer: start_lr " + std::to_string(options_.start_lr) + " and stop_lr " +
                      std::to_string(options_.stop_lr) + " must be positive");
  }
  if (options_.decay_steps < 1 || options_.total_steps < 1) {
    throw ConfigError("adam optimizer: decay_steps " + std::to_string(options_.decay_steps) +
                      " and numb_steps " + std::to_string(options_.total_steps) + " must be >= 1");
  }
  // r = (lr_stop / lr_0)^(s / T)
  decay_rate_ = std::pow(options_.stop_lr / options_.start_lr, static_cast<double>(options_.decay_steps) /
                                                                   static_cast<double>(options_.total_steps));
  torch::optim::AdamOptions adam_options(options_.start_lr);
  adam_options.betas({options_.beta1, options_.beta2}).eps(options_.eps).weight_decay(options_.weight_decay);
  adam_ = std::make_unique<torch::optim::Adam>(params_, adam_options);
}

AdamTrainer::~AdamTrainer() = default;

double AdamTrainer::learning_rate(std::int64_t step) const {
  // lr(t) = lr_0 * r^floor(t / s)
  const auto k = step / options_.decay_steps;
  return options_.start_lr * std::pow(decay_rate_, static_cast<double>(k));
}

LossPrefactors AdamTrainer::prefactors(std::int64_t step, double start_e, double limit_e, double start_f,
                                       double limit_f, double start_v, double limit_v) const {
  const double lr = learning_rate(step);
  return {adam_prefactor(start_e, limit_e, lr, options_.start_lr),
          adam_prefactor(start_f, limit_f, lr, options_.start_lr),
          adam_prefactor(start_v, limit_v, lr, options_.start_lr)};
}

void AdamTrainer::zero_grad() { adam_->zero_grad(); }

void AdamTrainer::step(std::int64_t step) {
  const double lr = learning_rate(step);
  for (auto& group : adam_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  adam_->step();
  last_step_ = step;
}

std::string AdamTrainer::status() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "lr %.3e", learning_rate(last_step_));
  return buf;
}

std::int64_t AdamTrainer::state_bytes() const {
  std::int64_t total = 0;
  for (const auto& entry : adam_->state()) {
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*entry.second);
    for (const auto& t : {s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()}) {
      if (t.defined()) total += t.numel() * static_cast<std::int64_t>(t.element_size());
    }
  }
  return total;
}

void AdamTrainer::save(torch::serialize::OutputArchive& archive) {
  torch::serialize::OutputArchive state;
  adam_->save(state);
  state.write("deepkf_last_step", torch::full({}, last_step_, torch::kInt64));
  archive.write("adam", state);
}

void AdamTrainer::load(torch::serialize::InputArchive& archive) {
  torch::serialize::InputArchive state;
  if (!archive.try_read("adam", state))
    throw OptimError("adam optimizer state: the archive has no 'adam' entry");
  try {
    adam_->load(state);
  } catch (const c10::Error& e) {
    throw OptimError(std::string("adam optimizer state: cannot restore torch::optim::Adam: ") +
                     e.what_without_backtrace());
  }
  torch::Tensor last;
  if (state.try_read("deepkf_last_step", last)) last_step_ = last.item<std::int64_t>();
}

}  // namespace deepkf
