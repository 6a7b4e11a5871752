#pragma once
// The two network shapes of DeepPot-SE: the embedding net G (tanh layers with DeePMD's skip rules) and the
// fitting net F (tanh layers, equal-width residual layers, a final linear layer to one output).
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <vector>

namespace deepkf {

class DenseNetImpl : public torch::nn::Module {
 public:
  enum class Kind { Embedding, Fitting };

  // n_in: input width; widths: the hidden layer widths. Parameters are registered layer by layer as
  // w<k> [n_in, n_out] (y = x W + b), b<k> [n_out], then dt<k> [n_out] when the layer has one; the fitting
  // net ends with a linear layer w<L>, b<L> to 1 output. Initialised with W ~ N(0, 1/sqrt(n_in + n_out)),
  // b ~ N(0, 1), dt ~ N(0.1, 0.001) drawn from `generator`, stored in `dtype`. bias = false: no b<k>
  // (z = x W; DeePMD-kit's type embedding net without use_tebd_bias). linear = true (an embedding net
  // only): h = z instead of tanh(z), the skip rules kept (DPA-1's type embedding).
  DenseNetImpl(Kind kind, std::int64_t n_in, const std::vector<int>& widths, bool resnet_dt,
               at::Generator generator, c10::ScalarType dtype, bool bias = true, bool linear = false);

  // x: ... x n_in -> ... x n_out (n_out = widths.back() for the embedding net, 1 for the fitting net).
  torch::Tensor forward(const torch::Tensor& x);

  // A net of one input (the embedding net) and its exact first and second derivatives by forward-mode
  // differentiation, layer by layer: z' = x' W, z'' = x'' W, h' = (1 - h^2) z', h'' = (1 - h^2) z'' -
  // 2 h h' z'. x: n x 1; returns {y, dy/dx, d2y/dx2}, each n x n_out, in x's dtype (the weights are
  // converted). Not differentiable (no autograd graph).
  std::array<torch::Tensor, 3> forward_derivatives(const torch::Tensor& x);

  // The net and the gradient of the sum of its outputs with respect to its input, by reverse-mode
  // differentiation written out (no autograd graph): for y = x + dt tanh(x W + b),
  // dL/dx = dL/dy + ((dL/dy dt) (1 - h^2)) W^T. x: n x n_in; returns {y: n x n_out, dsum(y)/dx: n x n_in}.
  std::array<torch::Tensor, 2> forward_with_input_gradient(const torch::Tensor& x);

  Kind kind() const { return kind_; }
  std::int64_t parameter_count() const;
  // Layers (the fitting net's last, linear one included) and whether layer k's parameters (w, b, dt) are
  // trained: requires_grad on them.
  std::size_t num_layers() const { return layers_.size(); }
  void set_layer_trainable(std::size_t k, bool trainable);

 private:
  struct Layer {
    torch::Tensor w, b, dt;  // b undefined without biases, dt when the layer has none
    // z = x W + b
    torch::Tensor affine(const torch::Tensor& x) const {
      return b.defined() ? torch::addmm(b, x, w) : x.mm(w);
    }
    bool skip = false;       // y = x + h (embedding also: y = [x, x] + h when out == 2 in)
    bool doubled = false;    // out == 2 in
    bool activation = true;  // false for the fitting net's last layer
  };
  Kind kind_;
  bool linear_ = false;
  std::vector<Layer> layers_;
};

TORCH_MODULE(DenseNet);

}  // namespace deepkf
