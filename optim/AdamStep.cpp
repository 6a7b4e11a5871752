#include "optim/AdamStep.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "optim/EnerLoss.hpp"
#include "optim/MemoryPlan.hpp"
#include "optim/RankSums.hpp"
#include "src/core/Error.hpp"
#include "src/core/HostMemory.hpp"

namespace deepkf {

namespace {

AdamOptions adam_options(const AdamSettings& s, std::int64_t numb_steps) {
  AdamOptions a;
  a.start_lr = s.start_lr;
  a.stop_lr = s.stop_lr;
  a.decay_steps = s.decay_steps;
  a.total_steps = numb_steps;
  a.beta1 = s.beta1;
  a.beta2 = s.beta2;
  a.weight_decay = s.weight_decay;
  return a;
}

}  // namespace

AdamStep::AdamStep(const AdamSettings& settings, const StepConfig& cfg, DeepPot model,
                   std::shared_ptr<Communicator> comm, const StepResources& resources)
    : options_(settings),
      model_(std::move(model)),
      params_(model_->trainable_parameters()),
      comm_(std::move(comm)),
      adam_(params_, adam_options(settings, cfg.numb_steps)) {
  plan(model_, resources);
}

std::string AdamStep::plan(const DeepPot& model, const StepResources& resources) {
  // Weights, gradients and the two moments (the model's precision), and one batch.
  const auto params = model->trainable_parameters();
  const std::int64_t state =
      4 * model->trainable_count() * static_cast<std::int64_t>(params.front().element_size());
  const std::int64_t need = state + resources.batch_bytes;
  if (!fits_in_memory(need, resources.available)) {
    throw ResourceError(
        fmt::format("not enough memory: Adam needs {} (weights, moments, one batch) per rank, {} "
                    "available ({}, 90 % usable): use a smaller batch_size or model",
                    format_bytes(need), format_bytes(resources.available), resources.where));
  }
  return fmt::format(
      "memory plan: {} (weights, moments, one batch) per rank, {} available ({})", format_bytes(need),
      resources.available < 0 ? std::string("unknown") : format_bytes(resources.available), resources.where);
}

std::string AdamStep::describe() const {
  return fmt::format("optimizer Adam: {}, lr {} -> {} every {} steps", model_->trained_text(),
                     options_.start_lr, options_.stop_lr, options_.decay_steps);
}

ErrorMetrics AdamStep::take(const StepInput& in) {
  const Batch& b = in.local;
  const auto& a = options_;
  const LossPrefactors pref = adam_.prefactors(in.step, a.start_pref_e, a.limit_pref_e, a.start_pref_f,
                                               a.limit_pref_f, a.start_pref_v, a.limit_pref_v);
  adam_.zero_grad();
  ErrorMetrics metrics;
  if (b.coord.size(0) > 0) {
    const auto out = model_->evaluate(b.coord, b.atype, b.nlist, b.shift, EvalOptions::training());
    const auto loss = ener_loss(out.energy, b.energy, b.has_force ? out.force : torch::Tensor(), b.force,
                                b.has_virial ? out.virial : torch::Tensor(), b.virial, b.natoms, pref.energy,
                                pref.force, pref.virial);
    loss.backward();
    metrics.add(out, b);
  }
  // Data parallel: the loss is a mean over the frames of this rank's share (all of one system, so every
  // frame has the same number of atoms); the global loss is the frame-weighted mean of the ranks' losses,
  // so weight each rank's gradient by its share of the frames before the sum (shares differ by one frame
  // when R does not divide B, and a rank may have none).
  if (comm_->size() > 1) {
    const double weight = static_cast<double>(b.coord.size(0)) / static_cast<double>(in.global_frames);
    std::vector<torch::Tensor> grads;
    for (const auto& p : params_)
      grads.push_back(p.grad().defined() ? p.grad() * weight : torch::zeros_like(p));
    grads = sum_gradients(grads, params_, *comm_);
    // sum_gradients returns views of one buffer; a gradient must own its memory (zero_grad detaches it).
    for (std::size_t i = 0; i < params_.size(); ++i) params_[i].mutable_grad() = grads[i].clone();
  }
  adam_.step(in.step);
  return metrics;
}

}  // namespace deepkf
