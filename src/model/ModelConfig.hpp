#pragma once
// Settings of a DeepPot-SE model (descriptor se_e2_a, se_e2_r or se_e3, fitting "ener"), read from
// DeePMD-kit's "model" section of input.json with DeePMD-kit's defaults for missing keys.
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/model/AttentionConfig.hpp"
#include "src/model/TypeEmbeddingConfig.hpp"

namespace deepkf {

struct ModelConfig {
  // The descriptor (docs/deep-potential.md): "se_e2_a" (angular and radial: D = T^T T[:, :M<]), "se_e2_r"
  // (radial only: D = mean_j G(s_ij) / 5) or "se_e3" (three-body: D = sum over neighbour-type pairs of the
  // mean of g_jk G(g_jk), g_jk = r^_j . r^_k), or "hybrid" (the descriptors of `parts` side by side).
  // "se_atten" (DPA-1: a type-embedded se_e2_a over the nearest neighbours of any type, refined by gated
  // self-attention over them). "se_e3_tebd" (three-body over the nearest neighbours of any type: D = mean
  // over slot pairs of g_jk G(g_jk, tebd_j, tebd_k)). DeePMD-kit's other spellings (se_a, se_r, se_at,
  // se_a_3be, se_t, dpa1, se_atten_v2) are read as these.
  std::string descriptor = "se_e2_a";
  // hybrid: one ModelConfig per descriptor of DeePMD-kit's "list", each with its own rcut, sel and nets
  // (and this one's type_map, precision and fitting settings). This config's rcut, rcut_smth, sel and
  // sel_auto are then the parts' combined (combine_parts): the neighbour list of the largest rcut with the
  // most slots any part asks for, of which each part reads the nearest sel_k[t] of each type.
  std::vector<ModelConfig> parts;
  std::vector<std::string> type_map;  // element names; type index t means type_map[t]
  // model.type_embedding (se_e2_a only): one embedding net and one fitting net for all types, which see the
  // types through their embedded vectors. tebd_input_mode "concat": G([s_ij, tebd_j]) (type_one_side) or
  // G([s_ij, tebd_j, tebd_i]); "strip" (DeePMD-kit's se_a_ebd_v2): G(s_ij) (1 + G_t(tebd_j)) or
  // G(s_ij) (1 + G_t([tebd_j, tebd_i])). The fitting net reads [D_i, tebd_i].
  // se_atten, se_e3_tebd: the descriptor's own type embedding (one linear layer of tebd_dim, unless the
  // model section gives a "type_embedding"), always present.
  TypeEmbeddingConfig type_embedding;
  std::string tebd_input_mode = "concat";
  // se_atten's attention layers and options; se_e3_tebd reads its smooth, concat_output_tebd and
  // set_davg_zero (layers 0)
  AttentionConfig attention;
  double rcut = 6.0;             // cutoff radius (A)
  double rcut_smth = 0.5;        // the switch starts here (A)
  std::vector<int> sel;          // neighbour slots per neighbour type (se_atten: one entry, any type)
  bool sel_auto = false;         // input said "auto": the caller fills `sel` from the data
  double sel_auto_factor = 1.1;  // "auto:1.2" -> 1.2
  std::vector<int> embedding_neuron{10, 20, 40};
  int axis_neuron = 4;         // M< of the descriptor D = T^T T[:, :M<] (se_e2_a only)
  bool type_one_side = false;  // true: one embedding net per neighbour type (se_e2_a, se_e2_r)
  bool embedding_resnet_dt = false;
  std::vector<int> fitting_neuron{120, 120, 120};
  bool fitting_resnet_dt = true;
  // Which weights training changes (DeePMD-kit's `trainable`): the embedding nets, and each layer of the
  // fitting nets (its hidden layers, then the output layer; empty: all).
  bool descriptor_trainable = true;
  std::vector<bool> fitting_trainable;
  bool fitting_layer_trainable(std::size_t k) const {
    return fitting_trainable.empty() || fitting_trainable.at(k);
  }
  std::int64_t seed = 1;                                // initialisation seed
  c10::ScalarType precision = c10::ScalarType::Double;  // kFloat64 or kFloat32
  std::string file;  // the input it was read from (from_json), named by validate()'s messages

  int ntypes() const { return static_cast<int>(type_map.size()); }
  // N_c = sum_t sel[t]
  std::int64_t nnei() const;
  // First slot of neighbour type t: sum_{u < t} sel[u].
  std::int64_t sel_offset(int t) const;
  // M = last embedding width
  std::int64_t embedding_width() const { return embedding_neuron.empty() ? 0 : embedding_neuron.back(); }
  bool radial() const { return descriptor == "se_e2_r"; }
  bool three_body() const { return descriptor == "se_e3"; }
  bool hybrid() const { return descriptor == "hybrid"; }
  bool attention_descriptor() const { return descriptor == "se_atten"; }
  bool three_body_tebd() const { return descriptor == "se_e3_tebd"; }
  // The neighbour list holds the nearest sel[0] neighbours of any type (se_atten, se_e3_tebd), not sel[t]
  // per type:
  // lists are built with every atom of one type (model_neighbor_list) and the model reads the
  // neighbours' types from atype.
  bool mixed_types() const { return attention_descriptor() || three_body_tebd(); }
  // Entries of sel: one per neighbour type, or 1 for mixed types.
  int neighbour_groups() const { return mixed_types() ? 1 : ntypes(); }
  bool type_embedded() const { return type_embedding.enabled(); }
  bool stripped() const { return type_embedded() && tebd_input_mode == "strip"; }
  // Width of the embedded types the embedding net (concat) or G_t (strip) reads: tebd_j, or [tebd_j, tebd_i]
  // (se_e3_tebd: [tebd_j, tebd_k]).
  std::int64_t type_input_dim() const { return type_embedding.width() * (type_one_side ? 1 : 2); }
  // The fitting net's input: D_i, with tebd_i after it under a type embedding (se_atten, se_e3_tebd: D_i,
  // which ends with tebd_i itself when concat_output_tebd).
  std::int64_t fitting_input_dim() const {
    return descriptor_dim() + (mixed_types() ? 0 : type_embedding.width());
  }
  // Descriptor length: M * M< (se_e2_a; se_atten plus tebd_i's Y with concat_output_tebd), M (se_e2_r,
  // se_e3; se_e3_tebd plus Y with concat_output_tebd), the parts' lengths summed (hybrid).
  std::int64_t descriptor_dim() const;
  // The descriptors of the model: `parts` (hybrid), else this config alone.
  std::vector<ModelConfig> descriptor_parts() const;
  // hybrid: rcut = the largest part's, rcut_smth = that part's, sel[t] = the most any part keeps,
  // sel_auto = whether any part is still "auto" (sel then empty).
  void combine_parts();
  // Slot indices (into this config's neighbour list) that part k reads: for each type t, the first
  // parts[k].sel[t] slots of t.
  std::vector<std::int64_t> part_slots(std::size_t k) const;
  // Rows of the statistics davg / dstd per centre type: nnei(), or the parts' nnei() one after the other.
  std::int64_t statistics_slots() const;
  // Embedding-net inputs per centre atom: N_c (se_e2_a, se_e2_r), the slot pairs j <= k of each type pair
  // (se_e3), N_c^2 (se_e3_tebd), the parts' sum (hybrid).
  std::int64_t embedding_inputs() const;
  // Embedding nets: ntypes (type_one_side), ntypes^2 (per centre and neighbour type), ntypes (ntypes + 1)
  // / 2 (se_e3: per unordered pair of neighbour types), the parts' sum (hybrid), 1 (type embedding: the net
  // of s; strip's G_t is counted apart).
  int embedding_count() const;
  // The net of a (centre type, neighbour type) pair (se_e2_a, se_e2_r), or of a pair of neighbour types
  // (se_e3, either order), as an index into the embedding nets (of one descriptor, not of a hybrid).
  int embedding_index(int first, int second) const;
  // Why a model of this config has no tables (`deepkf compress`, docs/compression.md), or "" where it is
  // tabulated: every descriptor but hybrids, a type embedding in "concat" form, se_e3_tebd, and se_atten with
  // attention layers or in "concat" form.
  std::string compression_refusal() const;
  // "float64" or "float32".
  std::string precision_name() const;

  // Throws ConfigError naming the key and value when a setting is unusable (sel unresolved or of the wrong
  // length, rcut_smth >= rcut, a width < 1, axis_neuron > M, ...).
  void validate() const;

  // The element names of a model section's type_map: a non-empty list of distinct strings, else
  // ConfigError naming `file` and the entry.
  static std::vector<std::string> read_type_map(const nlohmann::json& model_section, const std::string& file);

  // model_section: the "model" object of a DeePMD-kit input (type_map, descriptor, fitting_net).
  // Throws ConfigError for a missing or bad key; "sel": "auto" sets sel_auto and leaves sel empty.
  // `file` names the input in messages; unknown keys in model, model.descriptor and model.fitting_net are
  // errors with the nearest known key (DeePMD-kit keys without effect here are accepted).
  static ModelConfig from_json(const nlohmann::json& model_section, const std::string& file = "the input");
  // The same "model" object, with every value written out (sel resolved when it is).
  nlohmann::json to_json() const;
  // Where this configuration's architecture differs from `other`'s, one "key: this vs other" entry per
  // setting (seeds are not compared; nor is sel when this one says "auto").
  std::vector<std::string> differences(const ModelConfig& other) const;

 private:
  static ModelConfig parse(const nlohmann::json& model_section, const std::string& file);  // from_json's work
  void check() const;                                                                      // validate's work
  void check_hybrid() const;          // check's work on the parts of a hybrid
  void check_type_embedding() const;  // and on type_embedding and tebd_input_mode
};

}  // namespace deepkf
