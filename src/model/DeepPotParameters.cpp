// DeepPotImpl's parameter bookkeeping: which weights training changes, and their counts per net.
#include <fmt/format.h>
#include <torch/torch.h>

#include "src/core/Error.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {

void DeepPotImpl::set_trainable(bool descriptor, const std::vector<bool>& fitting) {
  ModelConfig c = config_;
  c.descriptor_trainable = descriptor;
  for (auto& p : c.parts) p.descriptor_trainable = descriptor;  // a hybrid's parts say the same
  c.fitting_trainable = fitting;
  c.validate();
  for (auto& net : embedding_)
    for (std::size_t k = 0; k < net->num_layers(); ++k) net->set_layer_trainable(k, descriptor);
  if (!type_filter_.is_empty())
    for (std::size_t k = 0; k < type_filter_->num_layers(); ++k)
      type_filter_->set_layer_trainable(k, descriptor);
  if (!attention_.is_empty()) attention_->set_trainable(descriptor);
  if (!type_net_.is_empty())
    for (std::size_t k = 0; k < type_net_->num_layers(); ++k)
      type_net_->set_layer_trainable(k, c.type_embedding.trainable);
  for (auto& net : fitting_)
    for (std::size_t k = 0; k < net->num_layers(); ++k)
      net->set_layer_trainable(k, c.fitting_layer_trainable(k));
  config_ = c;
}

std::vector<torch::Tensor> DeepPotImpl::trainable_parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

std::int64_t DeepPotImpl::trainable_count() const {
  std::int64_t n = 0;
  for (const auto& p : trainable_parameters()) n += p.numel();
  return n;
}

std::string DeepPotImpl::trained_text() const {
  const auto trained = trainable_count();
  const auto frozen = parameter_count() - trained;
  return frozen == 0 ? fmt::format("{} parameters", trained)
                     : fmt::format("{} parameters trained ({} frozen)", trained, frozen);
}

std::int64_t DeepPotImpl::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

std::vector<std::pair<std::string, std::int64_t>> DeepPotImpl::parameter_counts() const {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::size_t k = 0;
  if (!type_net_.is_empty()) out.emplace_back("type_embedding", type_net_->parameter_count());
  for (const auto& net : embedding_) out.emplace_back(net_names_[k++], net->parameter_count());
  if (!type_filter_.is_empty()) out.emplace_back("embedding[types]", type_filter_->parameter_count());
  if (!attention_.is_empty()) out.emplace_back("attention", attention_->parameter_count());
  for (const auto& net : fitting_) out.emplace_back(net_names_[k++], net->parameter_count());
  return out;
}

DeepPot model_in_precision(const DeepPot& model, c10::ScalarType precision) {
  ModelConfig c = model->config();
  c.precision = precision;
  for (auto& part : c.parts) part.precision = precision;
  DeepPot copy(c);
  copy->to(model->parameters().front().device());
  copy->set_training_range(model->training_range());
  copy_model_values(model, copy);
  return copy;
}

void copy_model_values(const DeepPot& from, DeepPot& to) {
  torch::NoGradGuard no_grad;
  const auto params = from->parameters();
  auto into = to->parameters();
  const auto buffers = from->buffers();
  auto buffers_into = to->buffers();
  if (params.size() != into.size() || buffers.size() != buffers_into.size())
    throw ModelError("copy_model_values: the two models have different networks");
  for (std::size_t k = 0; k < params.size(); ++k) into[k].copy_(params[k]);
  for (std::size_t k = 0; k < buffers.size(); ++k) buffers_into[k].copy_(buffers[k]);
}

}  // namespace deepkf
