#pragma once
// The descriptor stage of a compressed model's evaluation (docs/compression.md) on LibTorch tensors, on
// LibTorch's intra-op threads, without autograd: for se_e2_a and se_atten the kernel of TabulatedKernel,
// forward to T = R^T G / N_c and backward from dE/dT; for se_e3 and se_e3_tebd (strip) the kernel of
// TabulatedThreeBodyKernel, forward to the descriptor D itself and backward from dE/dD; both backward to
// forces and virials. CPU only: on other devices DeepPot evaluates the tables by LibTorch operations
// (EmbeddingTableImpl::values).
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "src/model/EmbeddingTable.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/model/TabulatedThreeBodyKernel.hpp"

namespace deepkf {

// What a type embedding's strip form multiplies the tables by; null or undefined where not used. What the
// members refer to must outlive the TabulatedDescriptor.
struct StripFactors {
  // The coefficients to use instead of the table's, one tensor per neighbour type (type_one_side) or per
  // (centre, neighbour) pair, all on the table's grid 0 (se_e2_a's strip form: G(s)'s table times each
  // pair's 1 + G_t); a mixed list (se_atten) has one per (centre, neighbour type or empty slot) pair.
  const std::vector<torch::Tensor>* scaled = nullptr;
  // se_atten's smooth gates: per pair as `scaled`, the coefficients of G times the pair's G_t, weighted by
  // the switch w(r) (TabulatedKernel.hpp).
  const std::vector<torch::Tensor>* gated = nullptr;
  // se_e3_tebd: H_ab = (G_t([tebd_a, tebd_b]) + G_t([tebd_b, tebd_a])) / 2 of every pair of types, the empty
  // slot's type ntypes last: (ntypes + 1) x (ntypes + 1) x M (TabulatedThreeBodyKernel.hpp).
  torch::Tensor pair_factors;
};

class TabulatedDescriptor {
 public:
  // table, config, davg/dstd (ntypes x nnei x 4): the compressed model's; coord: nframes x nall x 3 (A);
  // atype: nframes x nall (int64); nlist: nframes x nloc x nnei (int64, -1 empty); shift: nframes x nloc x
  // nnei x 3 (A) or undefined. Throws ModelError when the inputs are not on the CPU.
  TabulatedDescriptor(const EmbeddingTableImpl& table, const ModelConfig& config, const torch::Tensor& davg,
                      const torch::Tensor& dstd, const torch::Tensor& coord, const torch::Tensor& atype,
                      const torch::Tensor& nlist, const torch::Tensor& shift,
                      const StripFactors& strip = StripFactors());

  // se_e2_a, se_atten: T of every centre, (nframes nloc) x 4 x M; se_e3, se_e3_tebd: D of every centre,
  // (nframes nloc) x M (without se_e3_tebd's tebd_i). The model's dtype.
  torch::Tensor forward();
  // Table lookups beyond the end of their table in forward() (evaluated on the table's tangent line),
  // counted as the LibTorch path counts them.
  std::int64_t beyond_table() const { return beyond_; }

  struct Forces {
    torch::Tensor force;        // nframes x nall x 3 (eV/A)
    torch::Tensor virial;       // nframes x 9 (eV), W_ab = -sum_ij (dE/dr_ij)_a (r_ij)_b
    torch::Tensor atom_virial;  // nframes x nall x 9 (eV), each pair's term on its neighbour j; or undefined
  };
  // From dE/dT ((nframes nloc) x 4 x M) or, three-body, dE/dD ((nframes nloc) x M): F = -dE/dx and the
  // virials, by the exact derivative of the tables.
  Forces backward(const torch::Tensor& grad, bool need_atom_virial) const;

 private:
  bool three_body() const { return config_.three_body() || config_.three_body_tebd(); }
  template <typename Real>
  tabulated::Problem<Real> problem() const;
  template <typename Real>
  tabulated::ThreeBodyProblem<Real> three_body_problem() const;
  template <typename Real>
  torch::Tensor forward_as();
  template <typename Real>
  Forces backward_as(const torch::Tensor& grad, bool need_atom_virial) const;

  const EmbeddingTableImpl& table_;
  const ModelConfig& config_;
  torch::Tensor davg_, dstd_, coord_, atype_, nlist_, shift_;  // contiguous, CPU, model dtype / int64
  StripFactors strip_;
  std::int64_t beyond_ = 0;
};

}  // namespace deepkf
