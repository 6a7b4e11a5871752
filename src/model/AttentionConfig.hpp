#pragma once
// The gated self-attention of DeePMD-kit's se_atten / DPA-1 descriptor over a centre's neighbours
// (docs/deep-potential.md, "se_atten"): its layers, widths and the options of DeePMD-kit's descriptor
// section that shape them.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace deepkf {

struct AttentionConfig {
  int layers = 2;                     // attn_layer; 0: the type-embedded se_e2_a over the mixed list
  int width = 128;                    // attn: width of the queries, keys and values
  bool dotr = true;                   // attn_dotr: weights times r^_j . r^_k
  double scaling_factor = 1.0;        // logits scaled by (width scaling_factor)^-1/2 ...
  std::optional<double> temperature;  // ... or by this number when given
  bool normalize = true;              // queries, keys and values scaled to unit length
  bool trainable_ln = true;           // the layer norm's scale and shift are weights (else 1 and 0)
  double ln_eps = 1e-5;
  bool smooth = false;             // smooth_type_embedding: the switch w(r) gates logits and weights
  bool concat_output_tebd = true;  // the descriptor ends with the centre's type vector
  bool set_davg_zero = true;       // the environment's shift davg is 0 (se_atten's default)

  // The factor of q^T k in the logits.
  double scaling(int width_) const;
  // DeePMD-kit's keys, every value written out.
  void write(nlohmann::json& descriptor_section) const;
  // The keys of a se_atten / se_atten_v2 section at `path` (v2 fixes smooth true and set_davg_zero false
  // by default as DeePMD-kit does). ConfigError naming the key for a bad value or an option deepkf does
  // not build (attn_mask true).
  static AttentionConfig read(const nlohmann::json& section, bool v2, const std::string& path,
                              const std::string& file);
};

}  // namespace deepkf
