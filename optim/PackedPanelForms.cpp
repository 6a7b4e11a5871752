#include "optim/PackedPanelForms.hpp"

#include <torch/torch.h>

#include <algorithm>

#include "optim/PackedSweep.hpp"

namespace deepkf::packed {

torch::Tensor quadratic_forms_by_panels(const torch::Tensor& P, std::int64_t n, const torch::Tensor& H,
                                        std::int64_t panel_values) {
  const auto f64 = H.options();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(H.device());
  const std::int64_t rows_per_panel = std::max<std::int64_t>(1, panel_values / std::max<std::int64_t>(n, 1));
  auto q = torch::zeros({H.size(1)}, f64);
  for (std::int64_t r0 = 0; r0 < n; r0 += rows_per_panel) {
    const std::int64_t r1 = std::min(n, r0 + rows_per_panel);
    const std::int64_t begin = row_offset(n, r0), count = row_offset(n, r1) - begin;
    // Packed position t (from the panel's first value) of row r and column c lies at
    // t = row_offset(n, r) - begin + c - r, and goes to the dense panel's (r - r0) n + c, which is
    // t + begin + r (r + 1) / 2 - r0 n.
    const auto rows = torch::arange(r0, r1, i64);
    const auto r = torch::repeat_interleave(rows, n - rows, /*dim=*/0, /*output_size=*/count);
    const auto at = torch::arange(count, i64) + (r * (r + 1)).div(2, "floor") + (begin - r0 * n);
    auto panel = torch::zeros({(r1 - r0) * n}, f64);
    panel.index_put_({at}, P.narrow(0, begin, count).to(torch::kFloat64));
    const auto Hr = H.narrow(0, r0, r1 - r0);        // [rows, m]
    const auto UH = panel.view({r1 - r0, n}).mm(H);  // rows of U H
    const auto diagonal =
        P.index_select(0, rows * n - (rows * (rows - 1)).div(2, "floor")).to(torch::kFloat64);
    // The panel's share of 2 h^T U h - sum_r p_rr h_r^2, for every vector.
    q += (Hr * (2.0 * UH - diagonal.unsqueeze(1) * Hr)).sum(0);
  }
  return q;
}

}  // namespace deepkf::packed
