#pragma once
// The tables of a compressed model (docs/compression.md): every embedding net G(x) of a DeepPot-SE model as
// piecewise quintic polynomials in its input x (se_e2_a, se_e2_r: x = (s - davg) / dstd; se_e3: the product
// g_jk of two normalised directions), C2 at the knots (value, first and second derivative of the net
// there), on a fine grid over the range of x the training data reached and a coarser one beyond it up to
// `extrapolate` times the largest s. The coefficients are buffers of this
// module (saved in the model file and covered by its checksums); the layout (knots, settings) is the
// "compression" entry of the model file's metadata.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/model/DenseNet.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/model/TabulatedKernel.hpp"
#include "src/model/TrainingRange.hpp"

namespace deepkf {

struct TableSettings {
  double step = 0.01;         // knot spacing in the net's input x over the training range
  double extrapolate = 5.0;   // the coarse region reaches s = extrapolate * s(r_min)
  double coarse_factor = 10;  // coarse spacing = coarse_factor * step
  // Closest distance (A) the fine region must cover for every type pair: with min_distance_given the
  // smaller of this and the training range's distance; else used only where the training range is unknown.
  double min_distance = 0.5;
  bool min_distance_given = false;
};

// Largest differences between a table and its net, over points inside the intervals (for the log and the
// model file; docs/compression.md derives the bound they follow).
struct TableError {
  double value_fine = 0, slope_fine = 0;      // max |G_table - G|, max |G'_table - G'| over the fine region
  double value_coarse = 0, slope_coarse = 0;  // the same over the coarse region
};

class EmbeddingTableImpl : public torch::nn::Module {
 public:
  // Tabulates `nets` (in ModelConfig::embedding_index order) for a model with `config`, statistics davg/dstd
  // (ntypes x nnei x 4) and the training range `range` (may be empty), with `settings`. Throws ConfigError
  // for settings out of range or a table too large to hold.
  EmbeddingTableImpl(const std::vector<DenseNet>& nets, const std::vector<std::string>& names,
                     const ModelConfig& config, const torch::Tensor& davg, const torch::Tensor& dstd,
                     const TrainingRange& range, const TableSettings& settings);
  // Zero tables of the layout `layout` (what to_json wrote) for a model with `config`, to be filled by
  // loading the model's weights. Throws ModelError naming `where` when the layout is malformed.
  EmbeddingTableImpl(const nlohmann::json& layout, const ModelConfig& config, const std::string& where);

  // The layout and settings: {"step", "coarse_step", "extrapolate", "range", "min_distance",
  // "tables": [{"net", "x0", "step", "fine_intervals", "coarse_step", "coarse_intervals", "error"}]}.
  const nlohmann::json& to_json() const { return layout_; }
  std::size_t size() const { return coef_.size(); }
  const tabulated::Grid& grid(std::size_t k) const { return grids_[k]; }
  // Coefficients of table k: intervals x 6 x M, the model's dtype.
  const torch::Tensor& coefficients(std::size_t k) const { return coef_[k]; }
  const TableError& error(std::size_t k) const { return errors_[k]; }
  // G(x) of table k at every x (any shape), shape x.sizes() + [M] in the coefficients' dtype, by LibTorch
  // operations on x's device (EmbeddingTableValues.cpp): the interval, polynomial and tangent line beyond
  // the ends of the CPU kernel (TabulatedKernel.hpp), differentiable with respect to x (the derivative is
  // the polynomial's). Where given, beyond_end (an int64 scalar on x's device) counts the x beyond the
  // table's end or more than a fine step before its start. The path of devices without the kernel.
  torch::Tensor values(std::size_t k, const torch::Tensor& x, torch::Tensor* beyond_end = nullptr) const;
  // Bytes of all coefficients.
  std::int64_t bytes() const;

 private:
  void allocate(const ModelConfig& config);  // zero coefficient buffers for grids_

  std::vector<tabulated::Grid> grids_;
  std::vector<torch::Tensor> coef_;
  std::vector<TableError> errors_;
  nlohmann::json layout_;
};

TORCH_MODULE(EmbeddingTable);

}  // namespace deepkf
