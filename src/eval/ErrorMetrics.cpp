#include "src/eval/ErrorMetrics.hpp"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "src/data/System.hpp"
#include "src/eval/Potential.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"

namespace deepkf {
namespace {

double root_mean(double sum, std::int64_t n) {
  return n > 0 ? std::sqrt(sum / static_cast<double>(n)) : std::numeric_limits<double>::quiet_NaN();
}
double mean(double sum, std::int64_t n) {
  return n > 0 ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

void ErrorMetrics::add(const ModelOutput& out, const Batch& batch) {
  torch::NoGradGuard no_grad;
  const auto n = static_cast<double>(batch.natoms);
  // (E - E_ref) / N per frame
  const auto de = (out.energy.detach().to(torch::kFloat64) - batch.energy.to(torch::kFloat64)) / n;
  e_sq += de.square().sum().item<double>();
  e_abs += de.abs().sum().item<double>();
  e_count += de.numel();
  if (batch.has_force && out.force.defined()) {
    const auto df = out.force.detach().to(torch::kFloat64) - batch.force.to(torch::kFloat64);
    f_sq += df.square().sum().item<double>();
    f_abs += df.abs().sum().item<double>();
    f_count += df.numel();
  }
  if (batch.has_virial && out.virial.defined()) {
    const auto dv = (out.virial.detach().to(torch::kFloat64) - batch.virial.to(torch::kFloat64)) / n;
    v_sq += dv.square().sum().item<double>();
    v_abs += dv.abs().sum().item<double>();
    v_count += dv.numel();
  }
}

void ErrorMetrics::add(const System& labels, const std::vector<std::int64_t>& frames,
                       const PotentialResult& pred) {
  const double n = static_cast<double>(labels.natoms);
  const auto nf = static_cast<std::size_t>(3 * labels.natoms);
  const auto accumulate = [](double d, double& sq, double& abs, std::int64_t& count) {
    sq += d * d;
    abs += std::abs(d);
    ++count;
  };
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const auto f = static_cast<std::size_t>(frames[k]);
    if (!labels.energy.empty()) accumulate((pred.energy[k] - labels.energy[f]) / n, e_sq, e_abs, e_count);
    for (std::size_t c = 0; labels.has_force() && c < nf; ++c)
      accumulate(pred.force[k * nf + c] - labels.force[f * nf + c], f_sq, f_abs, f_count);
    for (std::size_t c = 0; labels.has_virial() && c < 9; ++c)
      accumulate((pred.virial[k * 9 + c] - labels.virial[f * 9 + c]) / n, v_sq, v_abs, v_count);
  }
}

void ErrorMetrics::merge(const ErrorMetrics& o) {
  e_sq += o.e_sq, e_abs += o.e_abs, e_count += o.e_count;
  f_sq += o.f_sq, f_abs += o.f_abs, f_count += o.f_count;
  v_sq += o.v_sq, v_abs += o.v_abs, v_count += o.v_count;
}

std::vector<double> ErrorMetrics::pack() const {
  return {e_sq, e_abs, static_cast<double>(e_count), f_sq, f_abs, static_cast<double>(f_count),
          v_sq, v_abs, static_cast<double>(v_count)};
}

void ErrorMetrics::unpack(const std::vector<double>& v) {
  e_sq = v.at(0), e_abs = v.at(1), e_count = std::llround(v.at(2));
  f_sq = v.at(3), f_abs = v.at(4), f_count = std::llround(v.at(5));
  v_sq = v.at(6), v_abs = v.at(7), v_count = std::llround(v.at(8));
}

double ErrorMetrics::rmse_e() const { return root_mean(e_sq, e_count); }
double ErrorMetrics::rmse_f() const { return root_mean(f_sq, f_count); }
double ErrorMetrics::rmse_v() const { return root_mean(v_sq, v_count); }
double ErrorMetrics::mae_e() const { return mean(e_abs, e_count); }
double ErrorMetrics::mae_f() const { return mean(f_abs, f_count); }
double ErrorMetrics::mae_v() const { return mean(v_abs, v_count); }

}  // namespace deepkf
