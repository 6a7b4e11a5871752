#include "src/model/AttentionConfig.hpp"

#include <cmath>

#include "src/core/Error.hpp"
#include "src/model/ModelKeys.hpp"

namespace deepkf {

double AttentionConfig::scaling(int width_) const {
  return temperature ? *temperature : 1.0 / std::sqrt(static_cast<double>(width_) * scaling_factor);
}

void AttentionConfig::write(nlohmann::json& d) const {
  d["attn_layer"] = layers;
  d["attn"] = width;
  d["attn_dotr"] = dotr;
  d["attn_mask"] = false;
  d["scaling_factor"] = scaling_factor;
  d["temperature"] = temperature ? nlohmann::json(*temperature) : nlohmann::json(nullptr);
  d["normalize"] = normalize;
  d["trainable_ln"] = trainable_ln;
  d["ln_eps"] = ln_eps;
  d["smooth_type_embedding"] = smooth;
  d["concat_output_tebd"] = concat_output_tebd;
  d["set_davg_zero"] = set_davg_zero;
}

AttentionConfig AttentionConfig::read(const nlohmann::json& s, bool v2, const std::string& path,
                                      const std::string& file) {
  using namespace model_keys;
  AttentionConfig c;
  const auto bad = [&](const std::string& key, const std::string& want) {
    throw ConfigError("model key '" + path + "." + key + "' in " + file + " must be " + want + ", got " +
                      s.at(key).dump());
  };
  c.layers = read_int(s, "attn_layer", c.layers, path, file);
  if (c.layers < 0) bad("attn_layer", "0 or more");
  c.width = read_int(s, "attn", c.width, path, file);
  if (c.width < 1) bad("attn", "at least 1");
  c.dotr = read_bool(s, "attn_dotr", c.dotr, path);
  if (read_bool(s, "attn_mask", false, path)) {
    throw ConfigError("model key '" + path + ".attn_mask' in " + file +
                      " is true: DeePMD-kit's own backends dropped the masked diagonal, and deepkf does "
                      "not build it either; set it false");
  }
  c.scaling_factor = read_number(s, "scaling_factor", c.scaling_factor, path);
  if (!(c.scaling_factor > 0.0)) bad("scaling_factor", "a number > 0");
  if (const auto* t = find(s, "temperature"); t != nullptr && !t->is_null()) {
    c.temperature = read_number(s, "temperature", 1.0, path);
    if (!std::isfinite(*c.temperature)) bad("temperature", "a finite number or null");
  }
  c.normalize = read_bool(s, "normalize", c.normalize, path);
  c.trainable_ln = read_bool(s, "trainable_ln", c.trainable_ln, path);
  if (const auto* e = find(s, "ln_eps"); e != nullptr && !e->is_null()) {
    c.ln_eps = read_number(s, "ln_eps", c.ln_eps, path);
    if (!(c.ln_eps > 0.0)) bad("ln_eps", "a number > 0 or null");
  }
  // se_atten_v2 is se_atten with the smooth gates always on and the shift kept (DeePMD-kit's defaults)
  c.set_davg_zero = v2 ? false : true;
  c.set_davg_zero = read_bool(s, "set_davg_zero", c.set_davg_zero, path);
  if (v2) {
    c.smooth = true;
  } else {
    const char* key =
        find(s, "smooth_type_embdding") != nullptr ? "smooth_type_embdding" : "smooth_type_embedding";
    c.smooth = read_bool(s, key, c.smooth, path);
  }
  c.concat_output_tebd = read_bool(s, "concat_output_tebd", c.concat_output_tebd, path);
  return c;
}

}  // namespace deepkf
