#include "src/model/DenseNet.hpp"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "src/core/Error.hpp"

namespace deepkf {

DenseNetImpl::DenseNetImpl(Kind kind, std::int64_t n_in, const std::vector<int>& widths, bool resnet_dt,
                           at::Generator generator, c10::ScalarType dtype, bool bias, bool linear)
    : kind_(kind), linear_(linear) {
  if (linear && kind != Kind::Embedding) throw ModelError("a linear dense net must be an embedding net");
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  std::vector<std::int64_t> sizes{n_in};
  for (int w : widths) sizes.push_back(w);
  if (kind == Kind::Fitting) sizes.push_back(1);
  const auto nlayers = sizes.size() - 1;
  for (std::size_t k = 0; k < nlayers; ++k) {
    const auto in = sizes[k];
    const auto out = sizes[k + 1];
    Layer layer;
    const bool last_linear = kind == Kind::Fitting && k + 1 == nlayers;
    layer.activation = !last_linear;
    if (kind == Kind::Embedding) {
      // embedding: out == in -> y = x + h ; out == 2 in -> y = [x, x] + h ; resnet_dt scales every h
      layer.skip = out == in || out == 2 * in;
      layer.doubled = out == 2 * in;
    } else {
      // fitting: equal-width layers after the first are residual; resnet_dt scales only those
      layer.skip = !last_linear && k > 0 && out == in;
    }
    const bool has_dt = resnet_dt && (kind == Kind::Embedding || layer.skip);
    // W ~ N(0, 1/sqrt(n_in + n_out)), b ~ N(0, 1), dt ~ N(0.1, 0.001)
    const double wstd = 1.0 / std::sqrt(static_cast<double>(in + out));
    const auto k_str = std::to_string(k);
    layer.w = register_parameter("w" + k_str, at::normal(0.0, wstd, {in, out}, generator, opts).to(dtype));
    if (bias)
      layer.b = register_parameter("b" + k_str, at::normal(0.0, 1.0, {out}, generator, opts).to(dtype));
    if (has_dt) {
      layer.dt = register_parameter("dt" + k_str, at::normal(0.1, 0.001, {out}, generator, opts).to(dtype));
    }
    layers_.push_back(layer);
  }
}

torch::Tensor DenseNetImpl::forward(const torch::Tensor& x) {
  // work on rows: (...) x n_in -> rows x n_in, restored at the end
  auto out_sizes = x.sizes().vec();
  auto y = x.reshape({-1, x.size(-1)});
  for (const auto& layer : layers_) {
    const auto in = layer.w.size(0);
    const auto out = layer.w.size(1);
    // z = x W + b (one fused kernel; a width-1 input is a broadcast product)
    auto z = in == 1 && layer.b.defined() ? torch::addcmul(layer.b, y, layer.w) : layer.affine(y);
    if (!layer.activation) {
      y = z;
      continue;
    }
    // h = tanh(z), or z for a linear net
    const auto h = linear_ ? z : torch::tanh(z);
    if (layer.doubled) {
      // y = [x, x] + h (* dt), without materialising [x, x]
      const auto xx = y.unsqueeze(1);
      const auto h2 = h.view({-1, 2, in});
      y = (layer.dt.defined() ? torch::addcmul(xx, h2, layer.dt.view({2, in})) : xx + h2).view({-1, out});
    } else if (layer.skip) {
      // y = x + h (* dt)
      y = layer.dt.defined() ? torch::addcmul(y, h, layer.dt) : y + h;
    } else {
      y = layer.dt.defined() ? h * layer.dt : h;
    }
  }
  out_sizes.back() = y.size(-1);
  return y.view(out_sizes);
}

std::array<torch::Tensor, 3> DenseNetImpl::forward_derivatives(const torch::Tensor& x) {
  torch::NoGradGuard guard;
  if (x.dim() != 2 || x.size(1) != 1 || layers_.front().w.size(0) != 1 || linear_) {
    throw ModelError("forward_derivatives needs a tanh net of one input and x of n x 1");
  }
  const auto dtype = x.scalar_type();
  // (y, y', y'') of the current layer's input; dx/dx = 1
  torch::Tensor y = x, y1 = torch::ones_like(x), y2 = torch::zeros_like(x);
  for (const auto& layer : layers_) {
    const auto w = layer.w.to(dtype);
    // z = y W + b, z' = y' W, z'' = y'' W
    const auto z = layer.b.defined() ? torch::addmm(layer.b.to(dtype), y, w) : y.mm(w);
    const auto z1 = y1.mm(w);
    const auto z2 = y2.mm(w);
    if (!layer.activation) {
      y = z, y1 = z1, y2 = z2;
      continue;
    }
    // h = tanh(z), h' = (1 - h^2) z', h'' = (1 - h^2) z'' - 2 h h' z'
    const auto h = torch::tanh(z);
    const auto g = 1.0 - h.square();
    auto h1 = g * z1;
    auto h2 = g * z2 - 2.0 * h * h1 * z1;
    auto h0 = h;
    if (layer.dt.defined()) {
      const auto dt = layer.dt.to(dtype);
      h0 = h0 * dt, h1 = h1 * dt, h2 = h2 * dt;
    }
    const auto combine = [&](const torch::Tensor& in, const torch::Tensor& hk) {
      if (layer.doubled) return torch::cat({in, in}, 1) + hk;  // y = [x, x] + h
      if (layer.skip) return in + hk;                          // y = x + h
      return hk;
    };
    y = combine(y, h0), y1 = combine(y1, h1), y2 = combine(y2, h2);
  }
  return {y, y1, y2};
}

std::array<torch::Tensor, 2> DenseNetImpl::forward_with_input_gradient(const torch::Tensor& x) {
  torch::NoGradGuard guard;
  if (linear_) throw ModelError("forward_with_input_gradient needs a tanh net");
  // forward, keeping each layer's tanh output
  std::vector<torch::Tensor> hs;
  hs.reserve(layers_.size());
  auto y = x;
  for (const auto& layer : layers_) {
    const auto in = layer.w.size(0);
    const auto z = layer.affine(y);
    if (!layer.activation) {
      hs.emplace_back();
      y = z;
      continue;
    }
    const auto h = torch::tanh(z);
    hs.push_back(h);
    const auto hd = layer.dt.defined() ? h * layer.dt : h;
    if (layer.doubled) {
      y = (y.unsqueeze(1) + hd.view({-1, 2, in})).view({-1, 2 * in});
    } else if (layer.skip) {
      y = y + hd;
    } else {
      y = hd;
    }
  }
  // backward from dL/dy = 1
  auto grad = torch::ones_like(y);
  for (std::size_t k = layers_.size(); k-- > 0;) {
    const auto& layer = layers_[k];
    const auto in = layer.w.size(0);
    if (!layer.activation) {
      grad = grad.mm(layer.w.t());  // dL/dx = dL/dz W^T
      continue;
    }
    // dL/dz = dL/dy dt (1 - h^2)
    auto gz = layer.dt.defined() ? grad * layer.dt : grad;
    gz = gz * (1.0 - hs[k].square());
    if (layer.doubled) {
      grad = torch::addmm(grad.view({-1, 2, in}).sum(1), gz, layer.w.t());  // + dL/dy[:in] + dL/dy[in:]
    } else if (layer.skip) {
      grad = torch::addmm(grad, gz, layer.w.t());  // + dL/dy
    } else {
      grad = gz.mm(layer.w.t());
    }
  }
  return {y, grad};
}

void DenseNetImpl::set_layer_trainable(std::size_t k, bool trainable) {
  Layer& layer = layers_.at(k);
  for (auto* t : {&layer.w, &layer.b, &layer.dt})
    if (t->defined()) t->requires_grad_(trainable);
}

std::int64_t DenseNetImpl::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace deepkf
