#include "src/model/DenseNet.hpp"

#include <torch/torch.h>

#include <cmath>
#include <string>

namespace deepkf {

DenseNetImpl::DenseNetImpl(Kind kind, std::int64_t n_in, const std::vector<int>& widths, bool resnet_dt,
                           at::Generator generator, c10::ScalarType dtype)
    : kind_(kind) {
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
    auto z = in == 1 ? torch::addcmul(layer.b, y, layer.w) : torch::addmm(layer.b, y, layer.w);
    if (!layer.activation) {
      y = z;
      continue;
    }
    // h = tanh(z)
    const auto h = torch::tanh(z);
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

std::int64_t DenseNetImpl::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace deepkf
