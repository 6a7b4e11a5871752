#include "optim/RlekfSettings.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace deepkf {

namespace {

const std::vector<std::string> kFilterPlaces = {"optimizer", "training"};
const std::vector<std::string> kPrefPlaces = {"optimizer", "training", "loss"};

OptionKey filter_key(const std::string& key) { return {key, kFilterPlaces}; }

OptionKey pref_key(const std::string& key) { return {key, kPrefPlaces}; }

// The settings kf_update "auto" chooses for a large model where the input leaves them out (decided()).
const std::vector<std::string> kLargeModelKeys = {
    "nselect", "groupsize", "force_noise", "trust_radius", "kalman_lambda", "energy_last", "p0_shape"};

// A relative noise as the input writes it: "auto" (0), "none" (1) or the value.
nlohmann::json noise_json(double rho) {
  if (rho <= 0.0) return "auto";
  if (rho == 1.0) return "none";
  return rho;
}

// A share as the input writes it: "none" (0) or the value.
nlohmann::json share_json(double s) { return s > 0.0 ? nlohmann::json(s) : nlohmann::json("none"); }

// A noise: a positive number, "auto" (0: chosen from the first batches) or "none" (1).
double read_noise(const OptimizerInput& in, const std::string& key) {
  const auto v = in.get<nlohmann::json>(
      filter_key(key), nlohmann::json("none"),
      [](const nlohmann::json& x) {
        return x == "auto" || x == "none" ||
               (x.is_number() && x.get<double>() > 0.0 && std::isfinite(x.get<double>()));
      },
      "must be a positive number, \"auto\" or \"none\"");
  return v == "auto" ? 0.0 : v == "none" ? 1.0 : v.get<double>();
}

// A share of an error an update removes: a number in (0, 1), or "none" (0).
double read_share(const OptimizerInput& in, const std::string& key) {
  const auto v = in.get<nlohmann::json>(
      filter_key(key), nlohmann::json("none"),
      [](const nlohmann::json& x) {
        return x == "none" || (x.is_number() && x.get<double>() > 0.0 && x.get<double>() < 1.0);
      },
      "must be a number in (0, 1) or \"none\"");
  return v == "none" ? 0.0 : v.get<double>();
}

// A positive finite number, or "none" (0).
double positive_or_none(const OptimizerInput& in, const std::string& key, const std::string& what) {
  const auto v = in.get<nlohmann::json>(
      filter_key(key), nlohmann::json("none"),
      [](const nlohmann::json& x) {
        return x == "none" || (x.is_number() && x.get<double>() > 0.0 && std::isfinite(x.get<double>()));
      },
      "must be a positive number" + what + " or \"none\"");
  return v == "none" ? 0.0 : v.get<double>();
}

// The covariance: its blocks, forgetting, initial value, bound and precision.
void read_covariance(const OptimizerInput& in, RlekfSettings& s) {
  const auto unit_interval = [](const double& v) { return v > 0.0 && v <= 1.0; };
  // kf_blocksize: a positive integer or "auto"
  const auto blocksize = in.get<nlohmann::json>(
      filter_key("kf_blocksize"), nlohmann::json("auto"),
      [](const nlohmann::json& v) {
        return v == "auto" || (v.is_number_integer() && v.get<std::int64_t>() >= 1);
      },
      "must be a positive integer or \"auto\"");
  s.blocksize = blocksize.is_string() ? 0 : blocksize.get<std::int64_t>();
  s.lambda0 = in.get<double>(filter_key("kalman_lambda"), 0.0, unit_interval, "must be in (0, 1]");
  s.nu = in.get<double>(filter_key("kalman_nue"), s.nu, unit_interval, "must be in (0, 1]");
  const auto p0 = in.get<nlohmann::json>(
      filter_key("p0"), nlohmann::json("auto"),
      [](const nlohmann::json& v) { return v == "auto" || (v.is_number() && v.get<double>() > 0.0); },
      "must be a positive number or \"auto\"");
  s.p0 = p0.is_string() ? 0.0 : p0.get<double>();
  s.p0_shape = in.get<std::string>(
      filter_key("p0_shape"), s.p0_shape,
      [](const std::string& v) { return v == "identity" || v == "gradient" || v == "layer"; },
      "must be \"identity\", \"gradient\" or \"layer\"");
  const auto p_cap = in.get<nlohmann::json>(
      filter_key("p_cap"), nlohmann::json(s.p_cap),
      [](const nlohmann::json& v) { return v == "none" || (v.is_number() && v.get<double>() >= 1.0); },
      "must be a number of at least 1 or \"none\"");
  s.p_cap = p_cap.is_string() ? 0.0 : p_cap.get<double>();
}

// The measurements of a step: force groups, the energy's repeats and replays, joint or sequential.
void read_measurements(const OptimizerInput& in, RlekfSettings& s) {
  s.nselect = in.get<int>(
      filter_key("nselect"), s.nselect, [](const int& v) { return v >= 1; }, "must be at least 1");
  const int nselect = s.nselect;
  s.groupsize = in.get<int>(
      filter_key("groupsize"), s.groupsize, [nselect](const int& v) { return v >= 1 && v <= nselect; },
      "must be between 1 and nselect (" + std::to_string(nselect) + ")");
  s.p_precision = in.get<std::string>(
      filter_key("p_precision"), s.p_precision,
      [](const std::string& v) { return v == "float64" || v == "float32" || v == "auto"; },
      "must be \"float64\", \"float32\" or \"auto\"");
  const auto energy_last = in.get<nlohmann::json>(
      filter_key("energy_last"), nlohmann::json("auto"),
      [](const nlohmann::json& v) { return v == "auto" || v.is_boolean(); },
      "must be true, false or \"auto\"");
  const auto replay = in.get<nlohmann::json>(
      filter_key("energy_replay"), nlohmann::json("auto"),
      [](const nlohmann::json& v) {
        return v == "auto" || (v.is_number_integer() && v.get<std::int64_t>() >= 0 &&
                               v.get<std::int64_t>() <= std::numeric_limits<int>::max());
      },
      "must be a non-negative integer or \"auto\"");
  s.energy_replay = replay.is_string() ? -1 : replay.get<int>();
  s.log_filter = in.get<bool>(filter_key("log_filter"), s.log_filter);
  s.update = in.get<std::string>(
      filter_key("kf_update"), s.update,
      [](const std::string& v) { return v == "joint" || v == "sequential" || v == "auto"; },
      "must be \"joint\", \"sequential\" or \"auto\"");
  s.force_gradient = in.get<std::string>(
      filter_key("force_gradient"), s.force_gradient,
      [](const std::string& v) { return v == "graph" || v == "difference" || v == "auto"; },
      "must be \"graph\", \"difference\" or \"auto\"");
  s.measure_precision = in.get<std::string>(
      filter_key("measure_precision"), s.measure_precision,
      [](const std::string& v) { return v == "float32" || v == "float64" || v == "auto"; },
      "must be \"float32\", \"float64\" or \"auto\"");
  // "auto" reads as "sequential" until decided() (the large-model settings replace what was left out).
  s.energy_last = energy_last.is_boolean() ? energy_last.get<bool>() : s.update != "joint";
}

// The measurements' noise, shares and the trust radius (docs/rlekf.md).
void read_noise_and_shares(const OptimizerInput& in, RlekfSettings& s) {
  s.force_noise = read_noise(in, "force_noise");
  s.virial_noise = read_noise(in, "virial_noise");
  s.energy_share = read_share(in, "energy_share");
  s.force_share = read_share(in, "force_share");
  s.virial_share = read_share(in, "virial_share");
  s.share_decay = positive_or_none(in, "share_decay", " of steps");
  s.share_rule = in.get<std::string>(
      filter_key("share_rule"), s.share_rule, [](const std::string& v) { return v == "exact" || v == "cap"; },
      "must be \"exact\" or \"cap\"");
  const bool cap = s.share_cap();
  const auto growth = in.get<nlohmann::json>(
      filter_key("share_growth"), nlohmann::json("none"),
      [cap](const nlohmann::json& x) {
        return x == "none" ||
               (cap && x.is_number() && x.get<double>() > 0.0 && std::isfinite(x.get<double>()));
      },
      cap ? "must be a positive number of steps or \"none\""
          : "needs \"share_rule\": \"cap\" (a growing exact share would pass 1), or \"none\"");
  s.share_growth = growth == "none" ? 0.0 : growth.get<double>();
  s.trust_radius = positive_or_none(in, "trust_radius", " (the largest weight change |dw| of an update)");
}

}  // namespace

const std::vector<OptionKey>& RlekfSettings::keys() {
  static const std::vector<OptionKey> all = keys_read_by(&RlekfSettings::read);
  return all;
}

RlekfSettings RlekfSettings::read(const OptimizerInput& in) {
  RlekfSettings s;
  read_covariance(in, s);
  read_measurements(in, s);
  read_noise_and_shares(in, s);
  // kalman_lambda not given: forget slowly where the force noise lets forces learn from the first step,
  // as DeePMD-kit does without it (RlekfSettings.hpp).
  if (s.lambda0 == 0.0) s.lambda0 = s.force_noise == 1.0 ? kLambdaWithoutNoise : kLambdaWithNoise;
  if (s.update == "auto") {
    for (const auto& key : kLargeModelKeys)
      if (in.find(key, filter_key(key).sections).empty()) s.unset.push_back(key);
  }
  const std::string rule = "must not be negative";
  s.start_pref_e = in.get<double>(pref_key("kf_start_pref_e"), s.start_pref_e, is_non_negative, rule);
  s.limit_pref_e = in.get<double>(pref_key("kf_limit_pref_e"), s.limit_pref_e, is_non_negative, rule);
  s.start_pref_f = in.get<double>(pref_key("kf_start_pref_f"), s.start_pref_f, is_non_negative, rule);
  s.limit_pref_f = in.get<double>(pref_key("kf_limit_pref_f"), s.limit_pref_f, is_non_negative, rule);
  s.start_pref_v = in.get<double>(pref_key("kf_start_pref_v"), s.start_pref_v, is_non_negative, rule);
  s.limit_pref_v = in.get<double>(pref_key("kf_limit_pref_v"), s.limit_pref_v, is_non_negative, rule);
  return s;
}

RlekfSettings RlekfSettings::decided(std::int64_t weights, double mean_frame_atoms,
                                     const std::string& restored) const {
  RlekfSettings s = *this;
  if (s.update != "auto") return s;
  s.update = !restored.empty() ? restored : weights >= kJointWeights ? "joint" : "sequential";
  const auto left_out = [&](const char* key) {
    return std::find(unset.begin(), unset.end(), key) != unset.end();
  };
  if (s.update == "joint") {
    if (left_out("force_noise")) s.force_noise = 0.0;  // "auto"
    if (left_out("trust_radius")) s.trust_radius = kJointTrustRadius;
    if (left_out("p0_shape") && weights >= kShapeWeights) s.p0_shape = kJointP0Shape;
    // Every atom of a frame in one force measurement (drawn with repeats; one backward pass whatever the
    // group's size); an nselect given is one group of that many, a groupsize given keeps nselect's default.
    if (left_out("nselect") && left_out("groupsize")) {
      s.nselect = std::max(s.nselect, static_cast<int>(std::ceil(mean_frame_atoms)));
      s.groupsize = s.nselect;
    } else if (left_out("groupsize")) {
      s.groupsize = s.nselect;
    }
    // A restored run keeps the checkpoint's blocks ("auto" takes them in the memory plan).
    if (restored.empty() && s.blocksize == 0) s.max_blocksize = kJointBlocksize;
    if (restored.empty() && s.p_precision == "auto") s.p_precision = "float32";
    if (left_out("kalman_lambda")) s.lambda0 = s.force_noise == 1.0 ? kLambdaWithoutNoise : kLambdaWithNoise;
    if (left_out("energy_last")) s.energy_last = false;
  }
  s.unset.clear();
  return s;
}

std::string RlekfSettings::force_gradient_for(bool float64_measurements) const {
  if (force_gradient != "auto") return force_gradient;
  // A one-sided difference loses about half of float32's digits (DifferenceGradients.hpp).
  return update == "joint" && float64_measurements ? "difference" : "graph";
}

std::string RlekfSettings::measure_precision_for(bool float64_model) const {
  if (measure_precision != "auto") return measure_precision;
  // The float32 sweep rounds H to float32 and the float32 graph gives it to ~1e-6 (docs/rlekf.md); the
  // sequential update stays DeePMD-kit's LKF, in the model's precision.
  return update == "joint" && p_precision == "float32" ? "float32" : float64_model ? "float64" : "float32";
}

nlohmann::json RlekfSettings::to_json() const {
  nlohmann::json j = {
      {"type", "RLEKF"},
      {"kf_blocksize", blocksize > 0 ? nlohmann::json(blocksize) : nlohmann::json("auto")},
      {"kalman_lambda", lambda0},
      {"kalman_nue", nu},
      {"p0", p0 > 0.0 ? nlohmann::json(p0) : nlohmann::json("auto")},
      {"p0_shape", p0_shape},
      {"p_cap", p_cap > 0.0 ? nlohmann::json(p_cap) : nlohmann::json("none")},
      {"nselect", nselect},
      {"groupsize", groupsize},
      {"kf_start_pref_e", start_pref_e},
      {"kf_limit_pref_e", limit_pref_e},
      {"kf_start_pref_f", start_pref_f},
      {"kf_limit_pref_f", limit_pref_f},
      {"kf_start_pref_v", start_pref_v},
      {"kf_limit_pref_v", limit_pref_v},
      {"p_precision", p_precision},
      {"energy_last", energy_last},
      {"energy_replay", energy_replay >= 0 ? nlohmann::json(energy_replay) : nlohmann::json("auto")},
      {"log_filter", log_filter},
      {"kf_update", update},
      {"force_gradient", force_gradient},
      {"measure_precision", measure_precision},
      {"force_noise", noise_json(force_noise)},
      {"virial_noise", noise_json(virial_noise)},
      {"energy_share", share_json(energy_share)},
      {"force_share", share_json(force_share)},
      {"virial_share", share_json(virial_share)},
      {"share_decay", share_decay > 0.0 ? nlohmann::json(share_decay) : nlohmann::json("none")},
      {"share_rule", share_rule},
      {"share_growth", share_growth > 0.0 ? nlohmann::json(share_growth) : nlohmann::json("none")},
      {"trust_radius", trust_radius > 0.0 ? nlohmann::json(trust_radius) : nlohmann::json("none")}};
  if (update == "auto")
    for (const auto& key : unset) j.erase(key);
  return j;
}

int auto_energy_replay(double frame_atoms, double batch_frames) {
  if (!(frame_atoms > 0.0)) return kMaxReplay;
  const double wanted = std::ceil(kReplayAtoms / frame_atoms - batch_frames);
  return static_cast<int>(std::clamp(wanted, 0.0, static_cast<double>(kMaxReplay)));
}

}  // namespace deepkf
