#include "optim/BlockLayout.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "optim/PackedSweep.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

namespace {

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

BlockLayout::BlockLayout(const std::vector<std::vector<std::int64_t>>& shapes, std::int64_t blocksize)
    : blocksize_(blocksize) {
  if (blocksize < 1) {
    throw OptimError("kalman block layout: kf_blocksize is " + std::to_string(blocksize) + ", must be >= 1");
  }
  if (shapes.empty()) throw OptimError("kalman block layout: no trainable parameters");

  // Flat offsets: tensors one after the other in registration order.
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    const auto& shape = shapes[t];
    if (shape.size() > 2) {
      throw OptimError("kalman block layout: parameter " + std::to_string(t) + " has shape " +
                       shape_string(shape) + "; only 0-, 1- and 2-d parameters have a defined flattening");
    }
    std::int64_t numel = 1;
    for (auto d : shape) {
      if (d < 0)
        throw OptimError("kalman block layout: parameter " + std::to_string(t) + " has shape " +
                         shape_string(shape));
      numel *= d;
    }
    tensors_.push_back({shape, num_parameters_, numel, shape.size() == 2});
    num_parameters_ += numel;
  }
  if (num_parameters_ == 0) throw OptimError("kalman block layout: all parameters are empty");

  // Greedy groups: close the running group when the next tensor would push it past b.
  std::vector<std::int64_t> groups;
  std::int64_t s = 0;
  for (const auto& slot : tensors_) {
    if (s + slot.numel > blocksize) {
      if (s > 0) groups.push_back(s);
      s = slot.numel;
    } else {
      s += slot.numel;
    }
  }
  groups.push_back(s);

  // Groups of size >= b are cut into ceil(size / b) blocks of b, the last one taking the remainder.
  std::int64_t begin = 0;
  for (const auto g : groups) {
    if (g == 0) continue;  // only possible for leading empty tensors
    if (g >= blocksize) {
      const std::int64_t count = (g + blocksize - 1) / blocksize;
      for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t n = k + 1 < count ? blocksize : g - blocksize * k;
        blocks_.push_back({begin, begin + n});
        begin += n;
      }
    } else {
      blocks_.push_back({begin, begin + g});
      begin += g;
    }
  }
}

BlockLayout BlockLayout::from_tensors(const std::vector<torch::Tensor>& params, std::int64_t blocksize) {
  std::vector<std::vector<std::int64_t>> shapes;
  shapes.reserve(params.size());
  for (std::size_t t = 0; t < params.size(); ++t) {
    if (!params[t].defined())
      throw OptimError("kalman block layout: parameter " + std::to_string(t) + " is undefined");
    shapes.push_back(params[t].sizes().vec());
  }
  return BlockLayout(shapes, blocksize);
}

std::int64_t BlockLayout::covariance_elements() const {
  std::int64_t total = 0;
  for (const auto& b : blocks_) total += packed::triangle_size(b.size());
  return total;
}

void BlockLayout::check_tensors(const std::vector<torch::Tensor>& tensors, bool allow_undefined) const {
  if (tensors.size() != tensors_.size()) {
    throw OptimError("kalman block layout: got " + std::to_string(tensors.size()) +
                     " tensors, the layout has " + std::to_string(tensors_.size()) + " parameters");
  }
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (!tensors[t].defined()) {
      if (allow_undefined) continue;
      throw OptimError("kalman block layout: tensor " + std::to_string(t) + " is undefined");
    }
    if (tensors[t].sizes().vec() != tensors_[t].shape) {
      throw OptimError("kalman block layout: tensor " + std::to_string(t) + " has shape " +
                       shape_string(tensors[t].sizes().vec()) + ", parameter " + std::to_string(t) + " has " +
                       shape_string(tensors_[t].shape));
    }
  }
}

torch::Tensor BlockLayout::flat_view(const torch::Tensor& flat, std::size_t t) const {
  const auto& slot = tensors_[t];
  auto part = flat.narrow(0, slot.offset, slot.numel);
  // W (rows x cols) is stored as W^T row-major: a [cols, rows] view.
  if (slot.transposed) return part.view({slot.shape[1], slot.shape[0]});
  return part.view(slot.shape);
}

torch::Tensor BlockLayout::tensor_view(const torch::Tensor& x, std::size_t t) const {
  return tensors_[t].transposed ? x.t() : x;
}

torch::Tensor BlockLayout::gather(const std::vector<torch::Tensor>& tensors, torch::ScalarType dtype) const {
  check_tensors(tensors, true);
  torch::Device device = torch::kCPU;
  for (const auto& x : tensors) {
    if (x.defined()) {
      device = x.device();
      break;
    }
  }
  auto out = torch::empty({num_parameters_}, torch::TensorOptions().dtype(dtype).device(device));
  gather_into(tensors, out);
  return out;
}

void BlockLayout::gather_into(const std::vector<torch::Tensor>& tensors, torch::Tensor& out) const {
  check_tensors(tensors, true);
  if (out.dim() != 1 || out.size(0) != num_parameters_) {
    throw OptimError("kalman block layout: flat vector has shape " + shape_string(out.sizes().vec()) +
                     ", expected [" + std::to_string(num_parameters_) + "]");
  }
  torch::NoGradGuard no_grad;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    auto dst = flat_view(out, t);
    if (tensors[t].defined()) {
      dst.copy_(tensor_view(tensors[t], t));
    } else {
      dst.zero_();
    }
  }
}

void BlockLayout::scatter(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) const {
  check_tensors(tensors, false);
  if (flat.dim() != 1 || flat.size(0) != num_parameters_) {
    throw OptimError("kalman block layout: flat vector has shape " + shape_string(flat.sizes().vec()) +
                     ", expected [" + std::to_string(num_parameters_) + "]");
  }
  torch::NoGradGuard no_grad;
  for (std::size_t t = 0; t < tensors.size(); ++t) tensor_view(tensors[t], t).copy_(flat_view(flat, t));
}

std::vector<int> block_owners(const BlockLayout& layout, int nranks) {
  const auto cost_of = [](const Block& b) {
    return static_cast<double>(b.size()) * static_cast<double>(b.size() + 1);
  };
  double total = 0.0;
  for (const auto& b : layout.blocks()) total += cost_of(b);
  std::vector<int> owners;
  double before = 0.0;
  for (const auto& b : layout.blocks()) {
    const double cost = cost_of(b);
    owners.push_back(
        std::min(nranks - 1, static_cast<int>(std::floor((before + 0.5 * cost) / total * nranks))));
    before += cost;
  }
  return owners;
}

}  // namespace deepkf
