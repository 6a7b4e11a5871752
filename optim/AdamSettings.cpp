#include "optim/AdamSettings.hpp"

#include "src/core/Error.hpp"

namespace deepkf {

namespace {

const std::vector<std::string> kSchedulePlaces = {"optimizer.learning_rate", "learning_rate"};
const std::vector<std::string> kPrefPlaces = {"optimizer", "loss"};

OptionKey schedule_key(const std::string& key) { return {key, kSchedulePlaces}; }
OptionKey pref_key(const std::string& key) { return {key, kPrefPlaces}; }
OptionKey optimizer_key(const std::string& key) { return {key, {"optimizer"}}; }

}  // namespace

const std::vector<OptionKey>& AdamSettings::keys() {
  static const std::vector<OptionKey> all = keys_read_by(&AdamSettings::read);
  return all;
}

AdamSettings AdamSettings::read(const OptimizerInput& in) {
  AdamSettings s;
  in.get<std::string>(
      schedule_key("type"), "exp", [](const std::string& v) { return v == "exp"; },
      "only \"exp\" (exponential decay) is supported");
  s.start_lr = in.get<double>(schedule_key("start_lr"), s.start_lr, is_positive, "must be positive");
  s.stop_lr = in.get<double>(schedule_key("stop_lr"), s.stop_lr, is_positive, "must be positive");
  // DeePMD-kit's stop_lr_ratio (v3) gives the final rate relative to the first: stop_lr = start_lr * ratio.
  const double ratio = in.get<double>(schedule_key("stop_lr_ratio"), 0.0, is_positive, "must be positive");
  if (ratio > 0.0) {
    if (const std::string stop = in.find("stop_lr", kSchedulePlaces); !stop.empty()) {
      throw ConfigError("'" + stop + "' and '" + in.find("stop_lr_ratio", kSchedulePlaces) + "' in " +
                        in.file() +
                        " both set the final learning rate (stop_lr = start_lr * stop_lr_ratio): "
                        "keep one");
    }
    s.stop_lr = s.start_lr * ratio;
  }
  s.decay_steps = in.get<std::int64_t>(
      schedule_key("decay_steps"), s.decay_steps, [](const std::int64_t& v) { return v >= 1; },
      "must be at least 1");
  // DeePMD-kit's scaling of the rate with the worker count: accepted, without effect (the gradient here is
  // the global batch's at any rank count).
  in.get<nlohmann::json>(schedule_key("scale_by_worker"), nlohmann::json());
  const std::string rule = "must not be negative";
  s.start_pref_e = in.get<double>(pref_key("start_pref_e"), s.start_pref_e, is_non_negative, rule);
  s.limit_pref_e = in.get<double>(pref_key("limit_pref_e"), s.limit_pref_e, is_non_negative, rule);
  s.start_pref_f = in.get<double>(pref_key("start_pref_f"), s.start_pref_f, is_non_negative, rule);
  s.limit_pref_f = in.get<double>(pref_key("limit_pref_f"), s.limit_pref_f, is_non_negative, rule);
  s.start_pref_v = in.get<double>(pref_key("start_pref_v"), s.start_pref_v, is_non_negative, rule);
  s.limit_pref_v = in.get<double>(pref_key("limit_pref_v"), s.limit_pref_v, is_non_negative, rule);
  const auto below_one = [](const double& v) { return v >= 0.0 && v < 1.0; };
  s.beta1 = in.get<double>(optimizer_key("adam_beta1"), s.beta1, below_one, "must be in [0, 1)");
  s.beta2 = in.get<double>(optimizer_key("adam_beta2"), s.beta2, below_one, "must be in [0, 1)");
  s.weight_decay = in.get<double>(optimizer_key("weight_decay"), s.weight_decay, is_non_negative, rule);
  return s;
}

nlohmann::json AdamSettings::to_json() const {
  return {{"type", "Adam"},
          {"learning_rate",
           {{"type", "exp"}, {"start_lr", start_lr}, {"stop_lr", stop_lr}, {"decay_steps", decay_steps}}},
          {"start_pref_e", start_pref_e},
          {"limit_pref_e", limit_pref_e},
          {"start_pref_f", start_pref_f},
          {"limit_pref_f", limit_pref_f},
          {"start_pref_v", start_pref_v},
          {"limit_pref_v", limit_pref_v},
          {"adam_beta1", beta1},
          {"adam_beta2", beta2},
          {"weight_decay", weight_decay}};
}

}  // namespace deepkf
