#include "src/uncertainty/UncertaintyCalibration.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

// Calls f(err, var) for every labelled energy (forces = false) or scored force component (true).
template <typename F>
void each_sample(const std::vector<FrameScore>& scores, bool forces, const F& f) {
  for (const auto& s : scores) {
    if (!forces) {
      if (std::isfinite(s.err_e)) f(s.err_e, s.var_e);
      continue;
    }
    for (std::size_t c = 0; c < s.err_f.size() && c < s.var_f.size(); ++c) f(s.err_f[c], s.var_f[c]);
  }
}

// s^2 = sum err^2 / sum var over the samples with var > 0; 0 (not calibrated) without any.
double fit_factor(const std::vector<FrameScore>& scores, bool forces, std::int64_t& samples) {
  double err2 = 0.0, var = 0.0;
  samples = 0;
  each_sample(scores, forces, [&](double e, double v) {
    if (!(v > 0.0) || !std::isfinite(e)) return;
    err2 += e * e;
    var += v;
    ++samples;
  });
  return samples > 0 && err2 > 0.0 ? std::sqrt(err2 / var) : 0.0;
}

// sigma = s sqrt(var), or sqrt(var) without a factor; a variance rounded below 0 counts as 0.
double sigma(double var, double factor) {
  return (factor > 0.0 ? factor : 1.0) * std::sqrt(std::max(var, 0.0));
}

}  // namespace

UncertaintyCalibration UncertaintyCalibration::fit(const std::vector<FrameScore>& scores,
                                                   const std::string& fitted_on) {
  UncertaintyCalibration c;
  c.energy = fit_factor(scores, false, c.energy_samples);
  c.force = fit_factor(scores, true, c.force_samples);
  c.fitted_on = fitted_on;
  return c;
}

nlohmann::json UncertaintyCalibration::to_json() const {
  return {{"energy", has_energy() ? nlohmann::json(energy) : nlohmann::json()},
          {"force", has_force() ? nlohmann::json(force) : nlohmann::json()},
          {"energy_samples", energy_samples},
          {"force_samples", force_samples},
          {"fitted_on", fitted_on}};
}

UncertaintyCalibration UncertaintyCalibration::from_json(const nlohmann::json& j, const std::string& where) {
  UncertaintyCalibration c;
  try {
    const auto factor = [&](const char* key) {
      const auto& v = j.at(key);
      if (v.is_null()) return 0.0;
      const double x = v.get<double>();
      if (!(x > 0.0) || !std::isfinite(x)) throw ModelError(std::string(key) + " is not a positive number");
      return x;
    };
    c.energy = factor("energy");
    c.force = factor("force");
    c.energy_samples = j.value("energy_samples", std::int64_t{0});
    c.force_samples = j.value("force_samples", std::int64_t{0});
    c.fitted_on = j.value("fitted_on", std::string());
  } catch (const std::exception& e) {
    throw ModelError(where + " has a malformed uncertainty calibration: " + e.what());
  }
  return c;
}

std::vector<FrameSubset> spread_frames(const std::vector<FrameSubset>& sets, std::int64_t count) {
  std::int64_t total = 0;
  for (const auto& s : sets) total += s.nframes();
  if (count >= total) return sets;
  // Frame floor(k total / count) of the concatenation, k = 0 .. count - 1.
  std::vector<FrameSubset> out;
  std::int64_t k = 0, before = 0;
  for (const auto& s : sets) {
    FrameSubset part{s.source, {}};
    for (; k < count && k * total / count < before + s.nframes(); ++k)
      part.frames.push_back(s.frames[static_cast<std::size_t>(k * total / count - before)]);
    before += s.nframes();
    if (!part.frames.empty()) out.push_back(std::move(part));
  }
  return out;
}

std::vector<FrameSubset> spread_order(const std::vector<FrameSubset>& sets) {
  std::vector<FrameSubset> frames;
  for (const auto& s : sets)
    for (const auto f : s.frames) frames.push_back(FrameSubset{s.source, {f}});
  const std::uint64_t n = frames.size();
  int bits = 0;
  while ((std::uint64_t{1} << bits) < n) ++bits;
  std::vector<FrameSubset> out;
  for (std::uint64_t i = 0; i < (std::uint64_t{1} << bits); ++i) {
    std::uint64_t r = 0;  // i with its `bits` low bits reversed
    for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1u) << (bits - 1 - b);
    if (r < n) out.push_back(frames[r]);
  }
  return out;
}

UncertaintyCalibration calibrate(DeepPot model, KalmanFilter& filter,
                                 const std::vector<FrameSubset>& labelled, std::int64_t count,
                                 std::uint64_t seed, const std::string& what, Communicator& comm,
                                 double time_budget) {
  auto sets = spread_frames(labelled, count);
  UncertaintyOptions options;
  options.seed = seed;
  if (time_budget > 0.0) {
    sets = spread_order(sets);
    options.time_budget = time_budget;
    options.min_frames = std::min<std::int64_t>(8, count);
  }
  const auto scored = score_frames(std::move(model), filter, sets, options, comm);
  return UncertaintyCalibration::fit(scored.frames,
                                     std::to_string(scored.frames.size()) + " frames of " + what);
}

FrameSigma frame_sigma(const FrameScore& score, const UncertaintyCalibration& calibration) {
  FrameSigma out;
  out.sigma_e = sigma(score.var_e, calibration.energy);
  const std::size_t k = score.atoms.size();
  if (k == 0) return out;
  out.sigma_f_max = 0.0;
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    // sigma_f,i = sqrt(sigma_ix^2 + sigma_iy^2 + sigma_iz^2)
    double var = 0.0;
    for (std::size_t a = 0; a < 3; ++a) var += std::max(score.var_f[3 * i + a], 0.0);
    const double s = sigma(var, calibration.force);
    out.sigma_f_max = std::max(out.sigma_f_max, s);
    sum += s;
    sum_sq += s * s;
  }
  out.sigma_f_mean = sum / static_cast<double>(k);
  out.sigma_f_rms = std::sqrt(sum_sq / static_cast<double>(3 * k));
  return out;
}

std::pair<double, double> error_to_sigma_ratio(const std::vector<FrameScore>& scores,
                                               const UncertaintyCalibration& calibration) {
  double ratio[2] = {FrameScore::kNone, FrameScore::kNone};
  for (int forces = 0; forces < 2; ++forces) {
    const double factor = forces ? calibration.force : calibration.energy;
    double err2 = 0.0, sigma2 = 0.0;
    each_sample(scores, forces != 0, [&](double e, double v) {
      if (!(v > 0.0) || !std::isfinite(e)) return;
      err2 += e * e;
      sigma2 += std::pow(sigma(v, factor), 2);
    });
    if (sigma2 > 0.0) ratio[forces] = std::sqrt(err2 / sigma2);
  }
  return {ratio[0], ratio[1]};
}

}  // namespace deepkf
