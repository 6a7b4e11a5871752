// EmbeddingTableImpl::values: a table evaluated by LibTorch operations, on any device.
#include <torch/torch.h>

#include <algorithm>

#include "src/model/EmbeddingTable.hpp"

namespace deepkf {

torch::Tensor EmbeddingTableImpl::values(std::size_t k, const torch::Tensor& x,
                                         torch::Tensor* beyond_end) const {
  const tabulated::Grid& g = grids_[k];
  const torch::Tensor& coef = coef_[k];  // intervals x 6 x M
  torch::Tensor value, slope;
  {
    torch::NoGradGuard no_grad;  // the derivative is written out below: no graph of the lookup
    const auto xv = x.detach().to(torch::kFloat64).flatten();  // float64, as tabulated::locate() takes x
    const double fine_end = g.fine_end(), end = g.end();
    // The interval, as locate(): in the fine grid, in the coarse one, else the last (at or after the end,
    // and for not-a-number); the first before x0. Chosen in float64, converted once it is finite.
    auto interval = torch::full_like(xv, static_cast<double>(g.intervals() - 1));
    if (g.ncoarse > 0) {
      const auto coarse =
          ((xv - fine_end) / g.coarse_step).floor().clamp(0.0, static_cast<double>(g.ncoarse - 1));
      interval = torch::where(xv.ge(fine_end) & xv.lt(end), coarse + static_cast<double>(g.nfine), interval);
    }
    const auto fine = ((xv - g.x0) / g.step)
                          .floor()
                          .clamp(0.0, static_cast<double>(std::max<std::int64_t>(g.nfine - 1, 0)));
    interval = torch::where(xv.ge(g.x0) & xv.lt(fine_end), fine, interval);
    const auto before = xv.lt(g.x0);
    interval = torch::where(before, torch::zeros_like(interval), interval);
    // t = x - x_i inside the table, 0 before it, the last interval's width after it; beyond = the distance
    // the tangent line covers past the end it passed (0 inside).
    const auto knot = torch::where(interval.le(static_cast<double>(g.nfine)), g.x0 + interval * g.step,
                                   fine_end + (interval - static_cast<double>(g.nfine)) * g.coarse_step);
    const auto inside = xv.ge(g.x0) & xv.lt(end);
    const double last_width = g.knot(g.intervals()) - g.knot(g.intervals() - 1);
    const auto zero = torch::zeros_like(xv);
    const auto t64 = torch::where(inside, xv - knot, torch::where(before, zero, zero + last_width));
    const auto beyond = torch::where(before, xv - g.x0, torch::where(inside, zero, xv - end));
    // Counted: beyond the end, or more than a fine step before x0 (only se_e3's input reaches below x0;
    // the step keeps a float32 input's rounding at x0 from counting).
    if (beyond_end != nullptr) *beyond_end = *beyond_end + (beyond.gt(0.0) | beyond.lt(-g.step)).sum();

    // G = p(t) + e p'(t) and G' = p'(t), by Horner's rule (the kernel's poly and dpoly), one power's
    // coefficients gathered at a time: P x M each.
    const auto at = interval.to(torch::kInt64);
    const auto c = [&](int j) { return coef.select(1, j).index_select(0, at); };
    const auto t = t64.to(coef.scalar_type()).unsqueeze(1);
    const auto e = beyond.to(coef.scalar_type()).unsqueeze(1);
    auto p = c(5);
    slope = 5.0 * p;
    for (int j = 4; j >= 0; --j) {
      const auto cj = c(j);
      p = p * t + cj;
      if (j >= 1) slope = slope * t + static_cast<double>(j) * cj;
    }
    value = p + e * slope;
  }
  auto sizes = x.sizes().vec();
  sizes.push_back(coef.size(2));
  value = value.view(sizes);
  if (!x.requires_grad()) return value;
  // Same values (x - x is zero), derivative G' with respect to x; the graph keeps G' alone.
  const auto dx = (x - x.detach()).to(coef.scalar_type()).unsqueeze(-1);
  return value + dx * slope.view(sizes);
}

}  // namespace deepkf
