// Time per RLEKF step (KalmanFilter::update, h given) for several kf_blocksize values and both covariance
// precisions, against references measured in the same run:
//   pass    Q.mul_(1.0) on a tensor of the packed covariance's size: one read + one write of its bytes,
//           the floor for a step that updates P in place
//   dense   the dense formulation the packed one replaced, on [nb, b, b] blocks: K_i = P_i h_i by one gemv
//           per block, then P = (P - K K^T / a) / lambda by one in-place baddbmm_ (beta = 1/lambda)
// and the covariance memory of the water reference model, packed and dense.
//
// Each problem has nb blocks of b, nb = max(4, enough blocks for `min MiB` of packed covariance), so that P
// is far larger than the caches and every number is a memory number.
//
// Usage: bench_kalman [min MiB (512)] [threads (2)] [blocksizes ... (1024 2048 4096 5120 8192 10240)]
// DEEPKF_BENCH_DEVICE=cuda runs the filter, the pass and the dense step on the GPU (a CUDA build).
// DEEPKF_BENCH_P_CAP=c times the steps with the covariance's diagonal capped at c p0 (p0 1; the check of
// every step, and a scaling pass in the steps where the cap is reached).
// DEEPKF_BENCH_JOINT=m also times the joint update of m measurements (KalmanFilter::update_joint, the rank-m
// update pending between steps), alternating with the scalar step: columns "joint ms" and "joint/step" (the
// joint update replaces m scalar steps, so below m it is a saving).
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "optim/BlockLayout.hpp"
#include "optim/KalmanFilter.hpp"
#include "src/model/CpuMemoryCache.hpp"

namespace {

using Clock = std::chrono::steady_clock;

torch::Device bench_device() {
  const char* d = std::getenv("DEEPKF_BENCH_DEVICE");
  return torch::Device(d && *d ? d : "cpu");
}

// Wall time of f, waiting for the device to finish its work before and after.
double time_ms(const std::function<void()>& f) {
  static const bool cuda = bench_device().is_cuda();
  if (cuda) torch::cuda::synchronize();
  const auto t0 = Clock::now();
  f();
  if (cuda) torch::cuda::synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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

// One step of the dense formulation on blocks P [nb, b, b] (the reference the packed step is compared to).
void dense_step(torch::Tensor& P, const torch::Tensor& h, double lambda) {
  const auto nb = P.size(0), b = P.size(1);
  auto K = torch::empty({nb, b, 1}, P.options());
  const auto hb = h.view({nb, b});
  double a = 0.0;
  if (P.is_cpu()) {
    for (std::int64_t i = 0; i < nb; ++i) {
      auto out = K[i].view({b});
      at::mv_out(out, P[i], hb[i]);  // K_i = P_i h_i (one gemv per block: faster than bmm on the CPU)
    }
  } else {
    K = torch::bmm(P, hb.unsqueeze(2));
  }
  a = static_cast<double>(nb) * lambda + (K.view({nb, b}) * hb).sum().item<double>();
  // P = (P - K K^T / a) / lambda
  P.baddbmm_(K, K.transpose(1, 2), 1.0 / lambda, -1.0 / (a * lambda));
}

// The water reference model's covariance at each block size: blocks, packed (float64, float32) and dense MiB.
void print_water_layouts() {
  const auto shapes = water_shapes();
  std::printf("\nwater reference model: %lld parameters\n",
              static_cast<long long>(deepkf::BlockLayout(shapes, 1).num_parameters()));
  std::printf("%10s %8s %18s %18s %18s\n", "blocksize", "blocks", "packed f64 MiB", "packed f32 MiB",
              "dense f64 MiB");
  for (const auto b : std::vector<std::int64_t>{1024, 2048, 4096, 5120, 8192, 10240}) {
    const deepkf::BlockLayout layout(shapes, b);
    double dense = 0.0;
    for (const auto& blk : layout.blocks())
      dense += static_cast<double>(blk.size()) * static_cast<double>(blk.size());
    const double packed = static_cast<double>(layout.covariance_elements());
    std::printf("%10lld %8lld %18.1f %18.1f %18.1f\n", static_cast<long long>(b),
                static_cast<long long>(layout.num_blocks()), packed * 8 / (1 << 20), packed * 4 / (1 << 20),
                dense * 8 / (1 << 20));
  }
}

// One row of the table: nb blocks of b (packed P of at least min_mib MiB) in `dtype`: the Kalman step, a
// plain pass over the same bytes, the dense reference step and, with joint_m > 0, the joint update of
// joint_m measurements, each the median of several.
void measure_row(std::int64_t b, c10::ScalarType dtype, double min_mib, int joint_m,
                 const torch::Device& device) {
  const auto elem = static_cast<double>(c10::elementSize(dtype));
  const double block_bytes = static_cast<double>(b) * static_cast<double>(b + 1) / 2 * elem;
  const auto nb =
      std::max<std::int64_t>(4, static_cast<std::int64_t>(min_mib * (1 << 20) / block_bytes + 0.999));
  const double bytes = block_bytes * static_cast<double>(nb);
  const int reps = bytes < 2e9 ? 9 : 5;
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  const auto h = 1e-3 * torch::randn({nb * b}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  std::vector<double> step, pass, dense, joint;
  {
    // The steps alternate with the passes, so that both see the same machine.
    std::vector<torch::Tensor> params = {torch::zeros({nb * b}, h.options())};
    deepkf::KalmanOptions o;
    o.blocksize = b;
    o.p_dtype = dtype;
    const char* cap = std::getenv("DEEPKF_BENCH_P_CAP");
    o.p_cap = cap && *cap ? std::atof(cap) : 0.0;
    deepkf::KalmanFilter kf(params, o);
    auto Q = torch::ones({static_cast<std::int64_t>(bytes / elem)}, opts);
    kf.update(0.01, {h});  // the first step has no pending update; every later one does
    // The joint filter's m gradients: h and m - 1 others of the same size.
    std::vector<torch::Tensor> joint_params = {torch::zeros({nb * b}, h.options())};
    std::unique_ptr<deepkf::KalmanFilter> joint_kf;
    std::vector<std::vector<torch::Tensor>> joint_grads;
    if (joint_m > 0) {
      joint_kf = std::make_unique<deepkf::KalmanFilter>(joint_params, o);
      for (int k = 0; k < joint_m; ++k) joint_grads.push_back({k == 0 ? h : 1e-3 * torch::randn_like(h)});
      joint_kf->update_joint(std::vector<double>(joint_m, 0.01), joint_grads);
    }
    for (int r = 0; r < reps; ++r) {
      step.push_back(time_ms([&] { kf.update(0.01, {h}); }));
      pass.push_back(time_ms([&] { Q.mul_(1.0); }));
      if (joint_kf)
        joint.push_back(
            time_ms([&] { joint_kf->update_joint(std::vector<double>(joint_m, 0.01), joint_grads); }));
    }
  }
  {
    auto P = torch::eye(b, opts).unsqueeze(0).repeat({nb, 1, 1});
    const auto hd = h.to(dtype);
    for (int r = 0; r < std::min(reps, 5); ++r) dense.push_back(time_ms([&] { dense_step(P, hd, 0.98); }));
  }
  const double s = median(step), p = median(pass), d = median(dense);
  std::printf("%8lld %4lld %8s %10.1f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f", static_cast<long long>(b),
              static_cast<long long>(nb), dtype == torch::kFloat64 ? "float64" : "float32", bytes / (1 << 20),
              s, p, s / p, d, d / s, 2 * bytes / (s * 1e6));
  if (!joint.empty()) std::printf(" %10.2f %10.2f", median(joint), median(joint) / s);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  // The update's temporaries (H, Y and U: m x N values each) come from LibTorch's CPU allocator, which the
  // deepkf command replaces by its cache of freed blocks; without it each update faults them in afresh.
  deepkf::use_cpu_memory_cache();
  const double min_mib = argc > 1 ? std::atof(argv[1]) : 512.0;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::vector<std::int64_t> sizes;
  for (int i = 3; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {1024, 2048, 4096, 5120, 8192, 10240};
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  const auto device = bench_device();
  std::printf("device %s, torch threads %d; each problem: nb blocks of b, packed P >= %.0f MiB\n",
              device.str().c_str(), torch::get_num_threads(), min_mib);
  if (const char* cap = std::getenv("DEEPKF_BENCH_P_CAP")) std::printf("p_cap %s\n", cap);

  print_water_layouts();

  const char* joint_env = std::getenv("DEEPKF_BENCH_JOINT");
  const int joint_m = joint_env && *joint_env ? std::atoi(joint_env) : 0;
  std::printf("\n%8s %4s %8s %10s %10s %10s %10s %10s %10s %10s", "b", "nb", "dtype", "P MiB", "step ms",
              "pass ms", "step/pass", "dense ms", "dense/step", "GB/s step");
  if (joint_m > 0) std::printf(" %10s %10s (m = %d)", "joint ms", "joint/step", joint_m);
  std::printf("\n");
  for (const auto b : sizes) {
    for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
      measure_row(b, dtype, min_mib, joint_m, device);
      std::fflush(stdout);
    }
  }
  return 0;
}
