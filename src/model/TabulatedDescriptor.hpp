#pragma once
// The descriptor stage of a compressed model's evaluation (docs/compression.md) on LibTorch tensors: the
// kernel of TabulatedKernel over all centres on LibTorch's intra-op threads, forward to T = R^T G / N_c,
// backward from dE/dT to forces and virials. No autograd. CPU only: on other devices DeepPot evaluates the
// tables by LibTorch operations (EmbeddingTableImpl::values).
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "src/model/EmbeddingTable.hpp"
#include "src/model/ModelConfig.hpp"

namespace deepkf {

class TabulatedDescriptor {
 public:
  // table, config, davg/dstd (ntypes x nnei x 4): the compressed model's; coord: nframes x nall x 3 (A);
  // atype: nframes x nall (int64); nlist: nframes x nloc x nnei (int64, -1 empty); shift: nframes x nloc x
  // nnei x 3 (A) or undefined. Throws ModelError when the inputs are not on the CPU. `scaled`: the
  // coefficients to use instead of table's, one tensor per neighbour type (type_one_side) or per (centre,
  // neighbour) pair, all on table's grid 0 (a type embedding's strip form: G(s)'s table times each pair's
  // 1 + G_t); null: table's own. A mixed list (se_atten) has one per (centre, neighbour type or empty
  // slot) pair. `gated`: null, or se_atten's smooth gates: per pair as `scaled`, the coefficients of G
  // times the pair's G_t, weighted by the switch w(r) (TabulatedKernel.hpp). They must outlive this object.
  TabulatedDescriptor(const EmbeddingTableImpl& table, const ModelConfig& config, const torch::Tensor& davg,
                      const torch::Tensor& dstd, const torch::Tensor& coord, const torch::Tensor& atype,
                      const torch::Tensor& nlist, const torch::Tensor& shift,
                      const std::vector<torch::Tensor>* scaled = nullptr,
                      const std::vector<torch::Tensor>* gated = nullptr);

  // T of every centre: (nframes nloc) x 4 x M, the model's dtype.
  torch::Tensor forward();
  // Slots whose x lay beyond the end of their table in forward() (evaluated on the table's tangent line).
  std::int64_t beyond_table() const { return beyond_; }

  struct Forces {
    torch::Tensor force;        // nframes x nall x 3 (eV/A)
    torch::Tensor virial;       // nframes x 9 (eV), W_ab = -sum_ij (dE/dr_ij)_a (r_ij)_b
    torch::Tensor atom_virial;  // nframes x nall x 9 (eV), each pair's term on its neighbour j; or undefined
  };
  // From dE/dT ((nframes nloc) x 4 x M): F = -dE/dx and the virials, by the exact derivative of the tables.
  Forces backward(const torch::Tensor& dT, bool need_atom_virial) const;

 private:
  template <typename Real>
  tabulated::Problem<Real> problem() const;
  template <typename Real>
  torch::Tensor forward_as();
  template <typename Real>
  Forces backward_as(const torch::Tensor& dT, bool need_atom_virial) const;

  const EmbeddingTableImpl& table_;
  const ModelConfig& config_;
  torch::Tensor davg_, dstd_, coord_, atype_, nlist_, shift_;  // contiguous, CPU, model dtype / int64
  const std::vector<torch::Tensor>* scaled_ = nullptr;
  const std::vector<torch::Tensor>* gated_ = nullptr;
  std::int64_t beyond_ = 0;
};

}  // namespace deepkf
