#include "optim/BlockGrams.hpp"

#include <torch/torch.h>

#include "optim/TaskPool.hpp"

namespace deepkf {

torch::Tensor block_grams_cpu(const torch::Tensor& X, const torch::Tensor& Z,
                              const std::vector<std::int64_t>& sizes) {
  const auto m = X.size(0);
  const auto blocks = static_cast<std::int64_t>(sizes.size());
  auto grams = torch::zeros({blocks, m, m}, torch::kFloat64);
  std::vector<std::int64_t> offsets(sizes.size() + 1, 0);
  for (std::size_t j = 0; j < sizes.size(); ++j) offsets[j + 1] = offsets[j] + sizes[j];
  const auto x = X.contiguous(), z = Z.contiguous();
  const double* xp = x.data_ptr<double>();
  const double* zp = z.data_ptr<double>();
  double* gp = grams.data_ptr<double>();
  const auto total = X.size(1);
  for_each_task(blocks, [&](std::int64_t j) {
    const auto begin = offsets[static_cast<std::size_t>(j)], end = offsets[static_cast<std::size_t>(j) + 1];
    for (std::int64_t a = 0; a < m; ++a) {
      for (std::int64_t b = 0; b < m; ++b) {
        double s = 0.0;
        for (auto c = begin; c < end; ++c) s += xp[a * total + c] * zp[b * total + c];
        gp[(j * m + a) * m + b] = s;
      }
    }
  });
  return grams;
}

torch::Tensor block_grams_batched(const torch::Tensor& X, const torch::Tensor& Z,
                                  const std::vector<std::int64_t>& sizes) {
  const auto m = X.size(0);
  auto grams = torch::empty({static_cast<std::int64_t>(sizes.size()), m, m}, X.options());
  std::int64_t begin = 0;
  for (std::size_t j = 0; j < sizes.size();) {
    const auto n = sizes[j];
    std::size_t k = 1;
    while (j + k < sizes.size() && sizes[j + k] == n) ++k;
    const auto run = static_cast<std::int64_t>(k);
    // [m, k n] -> [k, m, n]: block i of the run is the i-th slice.
    const auto x = X.narrow(1, begin, run * n).reshape({m, run, n}).permute({1, 0, 2});
    const auto z = Z.narrow(1, begin, run * n).reshape({m, run, n}).permute({1, 0, 2});
    grams.narrow(0, static_cast<std::int64_t>(j), run).copy_(torch::bmm(x, z.transpose(1, 2)));
    begin += run * n;
    j += k;
  }
  return grams.to(torch::kCPU);
}

}  // namespace deepkf
