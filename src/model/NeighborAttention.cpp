#include "src/model/NeighborAttention.hpp"

#include <torch/torch.h>

#include <cmath>

namespace deepkf {

torch::Tensor unit_rows(const torch::Tensor& v) {
  return v * v.square().sum(-1, true).clamp_min(1e-24).rsqrt();
}

namespace {

// DeePMD-kit's shift of the logits under the smooth gates: (L + 20) w_j w_k - 20 leaves a neighbour at the
// cutoff a logit of -20 whatever its query and key.
constexpr double kLogitShift = 20.0;

}  // namespace

NeighborAttentionImpl::NeighborAttentionImpl(const AttentionConfig& config, std::int64_t width,
                                             at::Generator generator, c10::ScalarType dtype)
    : config_(config) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const auto a = static_cast<std::int64_t>(config.width);
  const auto weight = [&](std::int64_t in, std::int64_t out) {
    return at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(in + out)), {in, out}, generator, f64)
        .to(dtype);
  };
  const auto bias = [&](std::int64_t out) { return at::normal(0.0, 1.0, {out}, generator, f64).to(dtype); };
  for (int l = 0; l < config.layers; ++l) {
    const auto k = std::to_string(l);
    Layer layer;
    layer.w_in = register_parameter("w_in" + k, weight(width, 3 * a));
    layer.b_in = register_parameter("b_in" + k, bias(3 * a));
    layer.w_out = register_parameter("w_out" + k, weight(a, width));
    layer.b_out = register_parameter("b_out" + k, bias(width));
    const auto ones = torch::ones({width}, torch::TensorOptions().dtype(dtype));
    const auto zeros = torch::zeros({width}, torch::TensorOptions().dtype(dtype));
    if (config.trainable_ln) {
      layer.ln_w = register_parameter("ln_w" + k, ones);
      layer.ln_b = register_parameter("ln_b" + k, zeros);
    } else {
      layer.ln_w = register_buffer("ln_w" + k, ones);
      layer.ln_b = register_buffer("ln_b" + k, zeros);
    }
    layers_.push_back(layer);
  }
}

torch::Tensor NeighborAttentionImpl::forward(const torch::Tensor& g, const torch::Tensor& real,
                                             const torch::Tensor& sw, const torch::Tensor& rhat) const {
  const auto a = static_cast<std::int64_t>(config_.width);
  const auto width = g.size(2);
  // gates shared by the layers: n x N x N
  const auto pair_sw = sw.unsqueeze(2) * sw.unsqueeze(1);                   // w_j w_k
  const auto keys_real = real.unsqueeze(1).expand({-1, real.size(1), -1});  // slot k holds a neighbour
  const auto queries_real = real.unsqueeze(2);
  const auto angle =
      config_.dotr ? torch::matmul(rhat, rhat.transpose(1, 2)) : torch::Tensor();  // r^_j . r^_k
  auto x = g;
  for (const auto& layer : layers_) {
    // q, k, v: n x N x A each, each from its columns of W_in (slicing the weights rather than one product
    // of all three keeps the slices' backward on the small weight matrix)
    const auto project = [&](std::int64_t part) {
      return torch::matmul(x, layer.w_in.narrow(1, part * a, a)) + layer.b_in.narrow(0, part * a, a);
    };
    auto q = project(0), k = project(1), v = project(2);
    if (config_.normalize) {
      q = unit_rows(q);
      k = unit_rows(k);
      v = unit_rows(v);
    }
    // logits L_jk = alpha q_j . k_k
    auto logits = torch::matmul(q * config_.scaling(config_.width), k.transpose(1, 2));
    if (config_.smooth) {
      logits = (logits + kLogitShift) * pair_sw - kLogitShift;
    } else {
      // empty key slots take no weight (a finite floor: a centre without neighbours stays finite)
      logits = logits.masked_fill(keys_real.logical_not(), -1e30);
    }
    auto weights = torch::softmax(logits, 2);
    weights = torch::where(queries_real, weights, torch::zeros({}, weights.options()));
    if (config_.smooth) weights = weights * pair_sw;
    if (config_.dotr) weights = weights * angle;
    // x <- LayerNorm(x + (weights v) W_out + b_out)
    const auto out = torch::matmul(torch::matmul(weights, v), layer.w_out) + layer.b_out;
    x = torch::layer_norm(x + out, {width}, layer.ln_w, layer.ln_b, config_.ln_eps);
  }
  return x;
}

std::int64_t NeighborAttentionImpl::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void NeighborAttentionImpl::set_trainable(bool trainable) {
  for (auto& p : parameters()) p.set_requires_grad(trainable);
}

}  // namespace deepkf
