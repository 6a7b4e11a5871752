#pragma once
// The Deep Potential model DeepPot-SE (descriptor se_e2_a, se_e2_r, se_e3, se_atten or hybrid, fitting
// "ener"), as defined in docs/deep-potential.md: per-atom energies from the smooth environment of each atom,
// forces and virials by autograd. Batched over frames, vectorised over atoms and neighbours, device- and
// precision-agnostic. A compressed model (compress(), docs/compression.md) evaluates its embedding nets from
// tables instead, with forces and virials from the tables' exact derivatives and no autograd, on the CPU.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/model/DenseNet.hpp"
#include "src/model/EmbeddingTable.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/model/NeighborAttention.hpp"
#include "src/model/TrainingRange.hpp"

namespace deepkf {

struct ModelOutput {
  torch::Tensor energy;       // nframes (eV)
  torch::Tensor atom_energy;  // nframes x nloc (eV)
  torch::Tensor force;        // nframes x nall x 3 (eV/A)
  torch::Tensor virial;       // nframes x 9, row-major W_ab (eV)
  torch::Tensor atom_virial;  // nframes x nall x 9 (eV), only when asked for
  // Compressed models: neighbour slots whose input lay beyond the end of the tables (evaluated on the
  // tables' tangent line there, docs/compression.md); 0 otherwise.
  std::int64_t beyond_table = 0;
  // d(sum of the frames' energies)/dw per trainable parameter (trainable_parameters() order), only when
  // asked for (EvalOptions::energy_gradient).
  std::vector<torch::Tensor> energy_gradient;
};

// What DeepPot::evaluate computes besides energies, forces and the virial, by name rather than by bare flags.
struct EvalOptions {
  bool create_graph = false;  // keep the outputs' graph for training (else they are detached)
  bool atom_virial = false;   // also the per-atom virial
  // Also ModelOutput::energy_gradient, from the same backward pass that gives the forces (no graph kept).
  bool energy_gradient = false;
  static EvalOptions training() {
    EvalOptions o;
    o.create_graph = true;
    return o;
  }
  static EvalOptions with_atom_virial(bool on = true) {
    EvalOptions o;
    o.atom_virial = on;
    return o;
  }
  static EvalOptions with_energy_gradient() {
    EvalOptions o;
    o.energy_gradient = true;
    return o;
  }
};

class DeepPotImpl : public torch::nn::Module {
 public:
  // Builds the networks from `config` (validated; sel must be resolved) with random weights drawn from
  // config.seed, in config.precision, on the CPU (move with ->to(device)). Registration order of the
  // parameters: the type embedding net (if any), embedding nets (under a type embedding: one, then strip's
  // G_t) (type_one_side: per neighbour type; se_e3: per pair of neighbour types
  // a <= b; else per (centre, neighbour) pair, centre-major), then the fitting nets per centre type; each
  // net layer by layer (w, b, dt).
  // Statistics davg = 0, dstd = 1 ([ntypes, statistics_slots, 4]: a hybrid's parts' rows one after the
  // other) and the energy bias 0 ([ntypes]) are buffers. A hybrid's nets are named d0_..., d1_...
  explicit DeepPotImpl(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  // coord: nframes x nall x 3 (A); atype: nframes x nall (int64, type index); nlist: nframes x nloc x nnei
  // (int64 index into nall, -1 empty, slots grouped by neighbour type as sel, or for mixed types the
  // nearest of any type: list_types); shift: nframes x nloc x nnei x 3 (A) or undefined (= zero). Centres
  // are the first nloc atoms. Returns per-atom energies nframes x nloc
  // (eV) in the model's dtype, differentiable with respect to coord and the parameters. Throws ModelError
  // for a compressed model (training needs the nets).
  torch::Tensor atomic_energy(const torch::Tensor& coord, const torch::Tensor& atype,
                              const torch::Tensor& nlist, const torch::Tensor& shift);

  // Energies, forces F = -dE/dx (eV/A) and the virial W_ab = -sum_ij (dE/dr_ij)_a (r_ij)_b (eV); the per-atom
  // virial (EvalOptions::atom_virial) gives each pair's term to the neighbour atom j, so it sums to the
  // virial. EvalOptions::create_graph keeps the graph of all outputs for training (double backward: the
  // outputs depend on the parameters; they are not differentiable with respect to coord); otherwise the
  // outputs are detached; EvalOptions::energy_gradient adds d(sum E)/dw from the forces' own backward pass.
  // Centre types must lie in [0, ntypes) (not checked here: make_batch and the LAMMPS type mapping guarantee
  // it). One host synchronisation per centre type (torch::nonzero groups the centres by type). A compressed
  // model refuses create_graph and energy_gradient (ModelError: training needs the nets); on the CPU it runs
  // the tables' kernels (TabulatedDescriptor; se_e2_r: LibTorch operations), elsewhere (or after
  // set_table_kernel(false)) the tables evaluated by LibTorch operations in place of the embedding nets,
  // forces by autograd as for the nets.
  ModelOutput evaluate(const torch::Tensor& coord, const torch::Tensor& atype, const torch::Tensor& nlist,
                       const torch::Tensor& shift, const EvalOptions& options = {});

  // davg, dstd: ntypes x config().statistics_slots() x 4 (1/A); copied into the buffers (device and dtype
  // of the model).
  void set_statistics(const torch::Tensor& davg, const torch::Tensor& dstd);
  // bias: ntypes (eV).
  void set_energy_bias(const torch::Tensor& bias);
  const torch::Tensor& davg() const { return davg_; }
  const torch::Tensor& dstd() const { return dstd_; }
  const torch::Tensor& energy_bias() const { return energy_bias_; }

  // The closest neighbour distances of the training data (empty when unknown: older model files).
  const TrainingRange& training_range() const { return training_range_; }
  void set_training_range(TrainingRange range) { training_range_ = std::move(range); }

  // Compression (docs/compression.md). compress() tabulates every embedding net with `settings` over the
  // training range (or the settings' fallback distance) and evaluates from the tables from then on; throws
  // ModelError when the model is already compressed and ConfigError for bad settings. prepare_tables()
  // registers zero tables of a stored layout (the model file's "compression" entry), to be filled when the
  // weights are loaded. Both on the CPU.
  bool compressed() const { return !table_.is_empty(); }
  void compress(const TableSettings& settings);
  void prepare_tables(const nlohmann::json& layout, const std::string& where);
  const EmbeddingTableImpl& table() const { return *table_; }
  // Whether a compressed model on the CPU uses the tables' kernel (the default) or the LibTorch operations
  // that other devices run: false compares the two on one machine.
  void set_table_kernel(bool use) { table_kernel_ = use; }

  std::int64_t parameter_count() const;
  // The parameters training changes (requires_grad), in registration order, and their count: all unless
  // the config's descriptor_trainable or fitting_trainable freezes some.
  std::vector<torch::Tensor> trainable_parameters() const;
  std::int64_t trainable_count() const;
  // "N parameters", or "N parameters trained (M frozen)" when some are frozen.
  std::string trained_text() const;
  // Freezes or frees weights as `descriptor` (the embedding nets) and `fitting` (per fitting layer; empty:
  // all) say, and records it in config() (fine-tuning a loaded model with the input's choice).
  void set_trainable(bool descriptor, const std::vector<bool>& fitting);
  // (net name, parameter count) in registration order: "embedding[O]" / "embedding[O,H]" / "fitting[O]".
  std::vector<std::pair<std::string, std::int64_t>> parameter_counts() const;

 private:
  void build();  // the networks and statistics buffers of config_, allocated
  // rij: nframes x nloc x nnei x 3 (model dtype); centre_types: nframes x nloc -> nframes x nloc (eV);
  // neighbour_types: nframes x nloc x nnei (-1 on empty slots), read by a mixed-type descriptor only
  // (neighbour_types()). A compressed model's embedding comes from its tables (counting into beyond_end,
  // where given, the slots beyond their table's end).
  torch::Tensor energy_from_pairs(const torch::Tensor& rij, const torch::Tensor& centre_types,
                                  const torch::Tensor& neighbour_types, torch::Tensor* beyond_end = nullptr);
  // The type of each slot's neighbour (atype gathered by nlist, -1 on empty slots) for a mixed-type
  // descriptor (ModelConfig::mixed_types); undefined otherwise.
  torch::Tensor neighbour_types(const torch::Tensor& atype, const torch::Tensor& nlist) const;
  // se_atten's descriptor of n centres of type c (DeepPotAttention.cpp): env_c n x N x 4 normalised rows,
  // sw_c n x N the switch w(r), types_c n x N the neighbours' types (-1 empty) -> n x descriptor_dim().
  // A compressed model (strip form, no attention layers) takes G(s) from its table, counting into beyond_end.
  torch::Tensor attention_descriptor(int c, const torch::Tensor& env_c, const torch::Tensor& sw_c,
                                     const torch::Tensor& types_c, const torch::Tensor& tebd,
                                     torch::Tensor* beyond_end);
  // se_e3_tebd's descriptor of the same inputs (DeepPotThreeBodyTebd.cpp) -> n x descriptor_dim(). A
  // compressed model (strip form) takes G(g) from its table, counting into beyond_end.
  torch::Tensor three_body_tebd_descriptor(int c, const torch::Tensor& env_c, const torch::Tensor& sw_c,
                                           const torch::Tensor& types_c, const torch::Tensor& tebd,
                                           torch::Tensor* beyond_end);
  // The embedding net of (first, second) of descriptor `part` (ModelConfig::embedding_index) at inputs x
  // (any shape): x.sizes() + [M], from the tables when compressed. Under a type embedding (tebd =
  // type_vectors()), the one net with the pair's vectors: G([x, pair_types]) or G(x) strip_factor (strip).
  // first/second: the centre and neighbour type (se_e2_a, se_e2_r) or two neighbour types (se_e3).
  torch::Tensor embed(std::size_t part, int first, int second, const torch::Tensor& x,
                      const torch::Tensor& tebd, torch::Tensor* beyond_end);
  // Each element's embedded vector tebd_t: ntypes x Y; undefined without a type embedding.
  torch::Tensor type_vectors();
  // The vectors a (centre, neighbour) pair's net reads: tebd_neighbour, or [tebd_neighbour, tebd_centre]
  // without type_one_side (neighbour first, as DeePMD-kit concatenates them).
  torch::Tensor pair_types(const torch::Tensor& tebd, int centre, int neighbour) const;
  // strip: the pair's factor on G(s), 1 + G_t(pair_types): M numbers.
  torch::Tensor strip_factor(const torch::Tensor& tebd, int centre, int neighbour);
  // The fitting net of centre type c, and its input from the centres' descriptors d: its own net and d, or
  // under a type embedding the one net for all and [d, tebd_c].
  DenseNet& fitting_net(int c) { return fitting_[config_.type_embedded() ? 0 : static_cast<std::size_t>(c)]; }
  torch::Tensor fitting_input(const torch::Tensor& d, const torch::Tensor& tebd, int c) const;
  // Descriptor `part` (parts_) of n centres of type c from their normalised environment rows env_c (n x
  // nnei_k x cols), filled (n x nnei_k, false where the raw row is 0: an empty slot or a neighbour at or
  // beyond rcut) and empty_s (nnei_k: column 0 of each slot's normalised empty row): n x its
  // descriptor_dim().
  torch::Tensor descriptor(std::size_t part, int c, const torch::Tensor& env_c, const torch::Tensor& filled,
                           const torch::Tensor& empty_s, const torch::Tensor& tebd,
                           torch::Tensor* beyond_end);
  // embed() of n centres' slots s (n x sel) that runs the net on the filled slots only: an unfilled slot
  // reads its slot's empty value empty_s, so G(empty_s) is taken once per slot and copied to the centres.
  torch::Tensor embed_filled(std::size_t part, int first, int second, const torch::Tensor& s,
                             const torch::Tensor& filled, const torch::Tensor& empty_s,
                             const torch::Tensor& tebd, torch::Tensor* beyond_end);
  // evaluate() of a compressed model: T (three-body: D) by the tables' kernel, the fitting nets and dE/dT
  // (dE/dD) written out, forces and virials by the kernel's backward pass.
  ModelOutput evaluate_compressed(const torch::Tensor& coord, const torch::Tensor& atype,
                                  const torch::Tensor& nlist, const torch::Tensor& shift,
                                  bool need_atom_virial);
  void refuse_training(const char* what) const;  // ModelError for a compressed model

  ModelConfig config_;
  // The descriptors (config_.descriptor_parts()): for each, its first embedding net and its first row of
  // davg/dstd.
  std::vector<ModelConfig> parts_;
  std::vector<int> first_net_;
  std::vector<std::int64_t> stat_offset_;
  std::vector<DenseNet> embedding_;
  std::vector<DenseNet> fitting_;
  std::vector<std::string> net_names_;
  DenseNet type_net_{nullptr};            // type embedding: one-hot(t) -> tebd_t
  DenseNet type_filter_{nullptr};         // strip: G_t of the embedded types
  NeighborAttention attention_{nullptr};  // se_atten with attn_layer > 0
  // A compressed strip model's tables for the CPU kernel: G(s)'s coefficients times 1 + G_t of each
  // neighbour type (type_one_side) or (centre, neighbour) pair, made at the first evaluation after the
  // weights are in place (a compressed model is not trained, so they stay valid; compress and
  // prepare_tables clear them).
  // se_atten's: per centre type and neighbour type (or empty slot); with the smooth gates G's own
  // coefficients, and in gated_tables_ those of G G_t (weighted by w(r) in the kernel).
  std::vector<torch::Tensor> strip_tables_, gated_tables_;
  const std::vector<torch::Tensor>& strip_tables();
  // se_e3_tebd's: H_ab = (G_t([tebd_a, tebd_b]) + G_t([tebd_b, tebd_a])) / 2 of every pair of types and the
  // empty slot, (ntypes + 1) x (ntypes + 1) x M, made as strip_tables_ are (StripFactors::pair_factors).
  torch::Tensor three_body_factors_;
  const torch::Tensor& three_body_factors();
  torch::Tensor davg_, dstd_, energy_bias_;
  TrainingRange training_range_;
  EmbeddingTable table_{nullptr};  // registered as "table" once compressed
  bool table_kernel_ = true;
};

TORCH_MODULE(DeepPot);

// A copy of `model` in `precision` on the same device: the same networks, trainable flags, weights,
// statistics and training range, the values rounded to the new precision.
DeepPot model_in_precision(const DeepPot& model, c10::ScalarType precision);
// Copies the parameters and buffers of `from` into those of `to`, a model_in_precision of it, converting
// each value to `to`'s precision.
void copy_model_values(const DeepPot& from, DeepPot& to);

}  // namespace deepkf
