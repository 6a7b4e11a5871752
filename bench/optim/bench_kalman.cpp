// Time per RLEKF step (update only, h given) for several kf_blocksize values and both covariance
// precisions, against memory passes over a tensor of the same size measured in the same run:
//   copy pass  Q.mul_(1.0)            one read + one write of P (the floor for an in-place update)
//   bmm        K = P h                one read of P, batched
//   gemv       K_i = P_i h_i          one read of P, one BLAS gemv per block (what the CPU step uses)
//   baddbmm_   P = (P - K K^T/a)/l    the rank-1 update alone
// and the covariance memory sum_i n_i^2 of the water reference model (shapes from deep-potential.md).
//
// Usage: bench_kalman [nblocks (4)] [threads (2)] [blocksizes ... (1024 2048 4096 5120 8192 10240)]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "optim/BlockLayout.hpp"
#include "optim/KalmanFilter.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(F&& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The water reference model's parameters in registration order: type_one_side, embedding [25, 50, 100]
// (no resnet_dt) for 2 neighbour types, fitting [240, 240, 240] with resnet_dt on the residual layers for
// 2 centre types, input 100 x 16 = 1600, final layer 240 -> 1. Weights are [in, out].
std::vector<std::vector<std::int64_t>> water_shapes() {
  std::vector<std::vector<std::int64_t>> s;
  for (int t = 0; t < 2; ++t) {
    const std::int64_t sizes[] = {1, 25, 50, 100};
    for (int k = 0; k < 3; ++k) {
      s.push_back({sizes[k], sizes[k + 1]});
      s.push_back({sizes[k + 1]});
    }
  }
  for (int t = 0; t < 2; ++t) {
    s.push_back({1600, 240});
    s.push_back({240});
    for (int k = 0; k < 2; ++k) {
      s.push_back({240, 240});
      s.push_back({240});
      s.push_back({240});  // resnet_dt
    }
    s.push_back({240, 1});
    s.push_back({1});
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t nblocks = argc > 1 ? std::atoll(argv[1]) : 4;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::vector<std::int64_t> sizes;
  for (int i = 3; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {1024, 2048, 4096, 5120, 8192, 10240};
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  std::printf("torch threads %d, %lld blocks of b per problem (N = %lld b)\n", torch::get_num_threads(),
              static_cast<long long>(nblocks), static_cast<long long>(nblocks));

  // Covariance memory of the water reference model.
  const auto shapes = water_shapes();
  std::printf("\nwater reference model: %lld parameters\n",
              static_cast<long long>(deepkf::BlockLayout(shapes, 1).num_parameters()));
  std::printf("%10s %8s %14s %14s\n", "blocksize", "blocks", "P float64 MiB", "P float32 MiB");
  for (const auto b : std::vector<std::int64_t>{1024, 2048, 4096, 5120, 8192, 10240}) {
    const deepkf::BlockLayout layout(shapes, b);
    const double elems = static_cast<double>(layout.covariance_elements());
    std::printf("%10lld %8lld %14.1f %14.1f\n", static_cast<long long>(b),
                static_cast<long long>(layout.num_blocks()), elems * 8 / (1 << 20), elems * 4 / (1 << 20));
  }

  std::printf("\n%10s %8s %10s %10s %10s %10s %10s %10s %9s %9s\n", "blocksize", "dtype", "P MiB", "step ms",
              "pass ms", "bmm ms", "gemv ms", "baddbmm ms", "step/pass", "GB/s pass");
  for (const auto b : sizes) {
    for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
      const int reps = b <= 4096 ? 15 : 7;
      const auto opts = torch::TensorOptions().dtype(dtype);
      const double bytes =
          static_cast<double>(nblocks * b * b) * static_cast<double>(c10::elementSize(dtype));
      // Passes over a tensor of P's size (before and after the Kalman steps; the median of both).
      std::vector<double> pass, bmm, gemv, baddbmm;
      auto passes = [&] {
        auto Q = torch::eye(b, opts).unsqueeze(0).repeat({nblocks, 1, 1});
        auto H = 1e-3 * torch::randn({nblocks, b, 1}, opts);
        for (int r = 0; r < reps; ++r) {
          pass.push_back(median_ms([&] { Q.mul_(1.0); }, 1));
          torch::Tensor K;
          bmm.push_back(median_ms([&] { K = torch::bmm(Q, H); }, 1));
          gemv.push_back(median_ms(
              [&] {
                for (std::int64_t i = 0; i < nblocks; ++i) {
                  auto out = K[i].view({b});
                  at::mv_out(out, Q[i], H[i].view({b}));
                }
              },
              1));
          baddbmm.push_back(median_ms([&] { Q.baddbmm_(K, K.transpose(1, 2), 1.0, -1e-9); }, 1));
        }
      };
      passes();
      double step = 0.0;
      {
        std::vector<torch::Tensor> params = {torch::zeros({nblocks * b}, torch::kFloat64)};
        deepkf::KalmanOptions o;
        o.blocksize = b;
        o.p_dtype = dtype;
        deepkf::KalmanFilter kf(params, o);
        const auto h = 1e-3 * torch::randn({nblocks * b}, torch::kFloat64);
        kf.update(0.01, {h});  // warm-up
        step = median_ms([&] { kf.update(0.01, {h}); }, reps);
      }
      passes();
      auto med = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const double p = med(pass);
      std::printf("%10lld %8s %10.1f %10.2f %10.2f %10.2f %10.2f %10.2f %9.2f %9.2f\n",
                  static_cast<long long>(b), dtype == torch::kFloat64 ? "float64" : "float32",
                  bytes / (1 << 20), step, p, med(bmm), med(gemv), med(baddbmm), step / p,
                  2 * bytes / (p * 1e6));
      std::fflush(stdout);
    }
  }
  return 0;
}
