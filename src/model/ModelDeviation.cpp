#include "src/model/ModelDeviation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace deepkf {

std::vector<double> force_deviation(const double* forces, std::size_t natoms, std::size_t nmodels,
                                    double relative_level, const double* reference) {
  std::vector<double> out(natoms, 0.0);
  if (nmodels == 0) return out;
  const double inv_k = 1.0 / static_cast<double>(nmodels);
  for (std::size_t i = 0; i < natoms; ++i) {
    const double* fi = forces + 3 * nmodels * i;
    // <F_i> = (1/K) sum_k F_ik
    double mean[3] = {0.0, 0.0, 0.0};
    for (std::size_t k = 0; k < nmodels; ++k) {
      for (int d = 0; d < 3; ++d) mean[d] += fi[3 * k + d];
    }
    for (double& m : mean) m *= inv_k;
    if (reference != nullptr) std::copy_n(reference + 3 * i, 3, mean);  // the labels take the mean's place
    // eps_i^2 = (1/K) sum_k |F_ik - <F_i>|^2
    double var = 0.0;
    for (std::size_t k = 0; k < nmodels; ++k) {
      for (int d = 0; d < 3; ++d) {
        const double diff = fi[3 * k + d] - mean[d];
        var += diff * diff;
      }
    }
    out[i] = std::sqrt(var * inv_k);
    if (relative_level >= 0.0) {
      // eps_i / (|<F_i>| + L)
      const double norm = std::sqrt(mean[0] * mean[0] + mean[1] * mean[1] + mean[2] * mean[2]);
      out[i] /= norm + relative_level;
    }
  }
  return out;
}

std::array<double, 9> virial_deviation(const double* virials, std::size_t nmodels, double natoms,
                                       double relative_level, const double* reference) {
  std::array<double, 9> out{};
  if (nmodels == 0 || natoms <= 0.0) return out;
  const double inv_k = 1.0 / static_cast<double>(nmodels);
  double mean_norm2 = 0.0;
  for (int c = 0; c < 9; ++c) {
    double mean = 0.0;
    for (std::size_t k = 0; k < nmodels; ++k) mean += virials[9 * k + c];
    mean *= inv_k;
    if (reference != nullptr) mean = reference[c];  // the label takes the mean's place
    mean_norm2 += mean * mean;
    double var = 0.0;
    for (std::size_t k = 0; k < nmodels; ++k) {
      const double diff = virials[9 * k + c] - mean;
      var += diff * diff;
    }
    // sigma_c = sqrt(var / K) / natoms
    out[c] = std::sqrt(var * inv_k) / natoms;
  }
  if (relative_level >= 0.0) {
    // sigma_c / (|<W>| / natoms + L)
    const double scale = std::sqrt(mean_norm2) / natoms + relative_level;
    for (double& s : out) s /= scale;
  }
  return out;
}

void DeviationExtremes::add(const std::vector<double>& values) {
  for (const double e : values) {
    max = std::max(max, e);
    min = std::min(min, e);
    sum += e;
  }
  count += static_cast<double>(values.size());
}

ModelDeviationRow deviation_row(const DeviationExtremes& force, const std::array<double, 9>& virial) {
  ModelDeviationRow row;
  row.max_devi_v = *std::max_element(virial.begin(), virial.end());
  row.min_devi_v = *std::min_element(virial.begin(), virial.end());
  row.avg_devi_v = std::sqrt(std::inner_product(virial.begin(), virial.end(), virial.begin(), 0.0) / 9.0);
  row.max_devi_f = force.max;
  row.min_devi_f = force.printed_min();
  row.avg_devi_f = force.mean();
  return row;
}

}  // namespace deepkf
