#pragma once
// DeePMD-kit's type embedding (model.type_embedding): each element t gets a vector tebd_t = net(one-hot(t))
// of `neuron.back()` numbers, from an embedding net of widths `neuron` (DeePMD's skip rules, without biases
// unless use_tebd_bias). A se_e2_a descriptor with a type embedding uses one embedding net for every pair
// of types and one fitting net for every element (docs/deep-potential.md, "Type embedding").
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace deepkf {

struct TypeEmbeddingConfig {
  std::vector<int> neuron;  // empty: the model has no type embedding
  bool resnet_dt = false;
  bool bias = false;  // use_tebd_bias
  bool trainable = true;
  bool linear = false;  // activation_function "linear" (DPA-1's own type embedding): no tanh

  bool enabled() const { return !neuron.empty(); }
  std::int64_t width() const { return neuron.empty() ? 0 : neuron.back(); }
  // DeePMD-kit's keys, every value written out (null when not enabled).
  nlohmann::json to_json(const std::string& precision_name) const;
  // The "type_embedding" object of a model section, with DeePMD-kit's defaults (neuron [8], tanh,
  // resnet_dt false, use_tebd_bias false, trainable true). ConfigError naming the key for a bad value, a
  // precision other than the model's, or an option deepkf does not build (use_econf_tebd, an activation
  // other than tanh or linear).
  static TypeEmbeddingConfig read(const nlohmann::json& section, c10::ScalarType model_precision,
                                  const std::string& file);
};

}  // namespace deepkf
