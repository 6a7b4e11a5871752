#pragma once
// Shared helpers of the model tests: small random systems, neighbour lists turned into model inputs, finite
// differences, ghost layouts and small models; the independent reference energy is in ModelReference.hpp.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "src/geometry/NeighborList.hpp"
#include "src/model/Batch.hpp"
#include "src/model/DeepPot.hpp"
#include "src/model/EnvMatrix.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/model/Statistics.hpp"
#include "tests/model/ModelReference.hpp"
#include "tests/support/TestData.hpp"

namespace deepkf::test {

// The "model" section of DeePMD-kit's water reference input (input_se_e2_a.reference.json of the shared
// water data; the test is skipped without it).
inline nlohmann::json water_reference_model() {
  std::ifstream in(require_shared_dataset("water") + "/input_se_e2_a.reference.json");
  return nlohmann::json::parse(in)["model"];
}

// Model inputs for one frame built with build_neighbor_list.
struct Inputs {
  torch::Tensor coord, atype, nlist, shift;
  std::int64_t ndropped = 0;
};

inline Inputs make_inputs(const Config& c, const ModelConfig& mc) {
  const auto n = c.natoms();
  const auto in_list = list_types(mc, c.types);
  const auto nl = build_neighbor_list(c.coord.data(), n, in_list.data(),
                                      c.box.empty() ? nullptr : c.box.data(), mc.rcut, mc.sel);
  Inputs in;
  in.coord = torch::tensor(c.coord, torch::kFloat64).view({1, n, 3});
  in.atype = torch::tensor(std::vector<int64_t>(c.types.begin(), c.types.end()), torch::kInt64).view({1, n});
  in.nlist = torch::tensor(nl.index, torch::kInt64).view({1, n, mc.nnei()});
  in.shift = torch::tensor(nl.shift, torch::kFloat64).view({1, n, mc.nnei(), 3});
  in.ndropped = nl.ndropped;
  return in;
}

inline ModelOutput run(DeepPot& model, const Config& c) {
  const auto in = make_inputs(c, model->config());
  return model->evaluate(in.coord, in.atype, in.nlist, in.shift);
}

inline double energy(DeepPot& model, const Config& c) { return run(model, c).energy.item<double>(); }

// A model of `mc` with random weights and the descriptor statistics, energy bias and training range of the
// frames of batch b (made with mc), as the trainer's statistics pass would set them.
inline DeepPot model_with_data_statistics(const ModelConfig& mc, const Batch& b) {
  DeepPot model(mc);
  StatisticsSums st(mc.ntypes());
  st.add_energy(b.energy, b.atype);
  // a hybrid's parts each from their own slots and cutoff, their rows one after the other
  auto env = descriptor_sums(mc);
  const auto rij = pair_vectors(b.coord, b.nlist, b.shift, mc.rcut);
  add_environments(env, rij, b.atype, mc);
  const auto [davg, dstd] = descriptor_statistics(env, mc);
  model->set_statistics(davg, dstd);
  model->set_energy_bias(st.energy_bias(mc.type_map).bias);
  TrainingRange range(mc.ntypes());
  range.add(closest_neighbours(rij, b.nlist, b.atype, mc), static_cast<double>(b.coord.size(0)));
  model->set_training_range(range);
  return model;
}

// F_i = -dE/dx_i by central differences, h = 1e-5 A: natoms x 3.
inline torch::Tensor fd_forces(DeepPot& model, Config c) {
  const double h = 1e-5;
  auto f = torch::zeros({c.natoms(), 3}, torch::kFloat64);
  for (std::int64_t k = 0; k < c.natoms() * 3; ++k) {
    const double x0 = c.coord[k];
    c.coord[k] = x0 + h;
    const double ep = energy(model, c);
    c.coord[k] = x0 - h;
    const double em = energy(model, c);
    c.coord[k] = x0;
    f.view({-1})[k] = -(ep - em) / (2 * h);
  }
  return f;
}

// dE/deps_ab for the strain x -> x (I + eps), h -> h (I + eps) (row vectors), by central differences:
// the virial is W = -(dE/deps)^T.
inline torch::Tensor fd_strain_derivative(DeepPot& model, const Config& c) {
  const double h = 1e-5;
  auto de = torch::zeros({3, 3}, torch::kFloat64);
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      double e[2];
      for (int s = 0; s < 2; ++s) {
        const double eps = s == 0 ? h : -h;
        Config d = c;
        // x'_b = x_b + x_a eps_ab (also for the rows of the box)
        for (std::size_t i = 0; i < d.coord.size() / 3; ++i) d.coord[3 * i + b] += c.coord[3 * i + a] * eps;
        for (int r = 0; r < 3; ++r) d.box[3 * r + b] += c.box[3 * r + a] * eps;
        e[s] = energy(model, d);
      }
      de[a][b] = (e[0] - e[1]) / (2 * h);
    }
  }
  return de;
}

// The periodic inputs of c as LAMMPS passes them: every (owner, shift) of the neighbour list with a non-zero
// shift becomes a ghost atom after the local ones, and the list names the ghosts with no shifts.
struct GhostLayout {
  torch::Tensor coord, atype, nlist;  // 1 x nall x 3, 1 x nall, 1 x natoms x nnei
  std::vector<int64_t> owner;         // the local atom of each ghost
};

inline GhostLayout ghost_layout(const Config& c, const Inputs& in, const ModelConfig& mc) {
  const auto n = c.natoms();
  std::vector<double> x(c.coord);
  std::vector<int64_t> types(c.types.begin(), c.types.end());
  GhostLayout g;
  g.nlist = in.nlist.clone();
  auto nl = g.nlist.accessor<int64_t, 3>();
  auto sh = in.shift.accessor<double, 4>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t s = 0; s < mc.nnei(); ++s) {
      const auto j = nl[0][i][s];
      if (j < 0 || (sh[0][i][s][0] == 0 && sh[0][i][s][1] == 0 && sh[0][i][s][2] == 0)) continue;
      for (int a = 0; a < 3; ++a) x.push_back(c.coord[3 * j + a] + sh[0][i][s][a]);
      types.push_back(c.types[j]);
      g.owner.push_back(j);
      nl[0][i][s] = static_cast<int64_t>(types.size()) - 1;
    }
  }
  const auto nall = static_cast<int64_t>(types.size());
  g.coord = torch::tensor(x, torch::kFloat64).view({1, nall, 3});
  g.atype = torch::tensor(types, torch::kInt64).view({1, nall});
  return g;
}

// The model on c's ghost layout against its periodic evaluation: relative differences of the energy, the
// forces (ghost forces summed onto their owners), the virial and the sum of the per-atom virials.
struct GhostComparison {
  double energy = 0, force = 0, virial = 0, atom_virial = 0;
};

inline GhostComparison compare_ghost_layout(DeepPot& model, const Config& c) {
  const auto& mc = model->config();
  const auto in = make_inputs(c, mc);
  const auto ref = model->evaluate(in.coord, in.atype, in.nlist, in.shift);
  const auto g = ghost_layout(c, in, mc);
  const auto out =
      model->evaluate(g.coord, g.atype, g.nlist, torch::Tensor(), deepkf::EvalOptions::with_atom_virial());
  const auto n = c.natoms();
  const auto nall = g.coord.size(1);
  auto f = out.force[0].narrow(0, 0, n).clone();
  f.index_add_(0, torch::tensor(g.owner, torch::kInt64), out.force[0].narrow(0, n, nall - n));
  const auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
  };
  GhostComparison r;
  r.energy = rel(out.energy, ref.energy);
  r.force = rel(f, ref.force[0]);
  r.virial = rel(out.virial, ref.virial);
  r.atom_virial = rel(out.atom_virial[0].sum(0), ref.virial[0]);
  return r;
}

// Atoms on a jittered grid of the cell h (9 values) so that no two atoms are closer than ~0.5 of a spacing.
inline Config jittered_cell(const std::vector<double>& h, int per_side, int ntypes, unsigned seed,
                            double jitter = 0.15) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-jitter, jitter);
  Config c;
  c.box = h;
  for (int i = 0; i < per_side; ++i) {
    for (int j = 0; j < per_side; ++j) {
      for (int k = 0; k < per_side; ++k) {
        const double f[3] = {(i + 0.5 + u(gen)) / per_side, (j + 0.5 + u(gen)) / per_side,
                             (k + 0.5 + u(gen)) / per_side};
        for (int d = 0; d < 3; ++d) c.coord.push_back(f[0] * h[d] + f[1] * h[3 + d] + f[2] * h[6 + d]);
        c.types.push_back(static_cast<int>(c.types.size() * 7 % static_cast<std::size_t>(ntypes)));
      }
    }
  }
  return c;
}

// A small two-type model with non-trivial statistics (constant over each centre type's slots, different
// per type and column).
inline ModelConfig small_config(bool type_one_side, bool resnet_dt,
                                const std::string& descriptor = "se_e2_a") {
  if (descriptor == "hybrid") {
    // se_e2_a with a shorter cutoff and fewer slots, se_e2_r and se_e3 with a shorter one still
    ModelConfig mc = small_config(type_one_side, resnet_dt, "se_e2_a");
    ModelConfig a = mc, r = small_config(type_one_side, resnet_dt, "se_e2_r"),
                e = small_config(false, resnet_dt, "se_e3");
    a.rcut = 2.5;
    a.rcut_smth = 0.8;
    a.sel = {12, 12};
    e.rcut = 2.2;
    e.sel = {6, 6};
    e.embedding_neuron = {4, 8};
    mc.descriptor = "hybrid";
    mc.parts = {a, r, e};
    mc.combine_parts();
    return mc;
  }
  if (descriptor == "se_e2_a_tebd" || descriptor == "se_a_ebd_v2") {
    // se_e2_a with a type embedding whose widths take every skip rule (2 -> 2 -> 4 -> 8 from the one-hot 2)
    ModelConfig mc = small_config(type_one_side, resnet_dt, "se_e2_a");
    mc.type_embedding.neuron = {2, 4, 8};
    mc.type_embedding.resnet_dt = resnet_dt;
    if (descriptor == "se_a_ebd_v2") mc.tebd_input_mode = "strip";
    return mc;
  }
  if (descriptor == "se_atten" || descriptor == "se_atten_v2" || descriptor == "se_atten_v2_0") {
    // se_atten over 40 slots of any type with two attention layers; "se_atten": concat, DPA-1's linear
    // type embedding of width 2 (= ntypes: its skip rule y = x + x W), no smooth gates; "se_atten_v2":
    // strip with the smooth gates, type vectors of 4 (= 2 ntypes: y = [x, x] + x W), attn_dotr off;
    // "se_atten_v2_0": the same without attention layers (the form that is compressed)
    ModelConfig mc = small_config(type_one_side, resnet_dt, "se_e2_a");
    mc.descriptor = "se_atten";
    mc.sel = {40};
    mc.type_embedding.neuron = {descriptor == "se_atten" ? 2 : 4};
    mc.type_embedding.linear = true;
    mc.attention.layers = descriptor == "se_atten_v2_0" ? 0 : 2;
    mc.attention.width = 6;
    if (descriptor != "se_atten") {
      mc.tebd_input_mode = "strip";
      mc.attention.smooth = true;
      mc.attention.dotr = false;
      mc.attention.set_davg_zero = false;
      mc.attention.temperature = 0.8;
    }
    return mc;
  }
  if (descriptor == "se_e3_tebd" || descriptor == "se_e3_tebd_strip") {
    // se_e3_tebd over 40 slots of any type; concat with type vectors of 2 (= ntypes), or strip with the
    // smooth gates, type vectors of 4 and no centre type in D (concat_output_tebd false)
    ModelConfig mc = small_config(false, resnet_dt, "se_e3");
    mc.descriptor = "se_e3_tebd";
    mc.sel = {40};
    mc.embedding_neuron = {2, 4, 8};
    mc.type_embedding.neuron = {descriptor == "se_e3_tebd" ? 2 : 4};
    mc.type_embedding.linear = true;
    mc.attention.layers = 0;
    mc.attention.smooth = true;
    if (descriptor == "se_e3_tebd_strip") {
      mc.tebd_input_mode = "strip";
      mc.attention.concat_output_tebd = false;
      mc.attention.set_davg_zero = false;
    }
    return mc;
  }
  ModelConfig mc;
  mc.descriptor = descriptor;
  mc.type_map = {"A", "B"};
  mc.rcut = 3.0;
  mc.rcut_smth = 1.0;
  mc.sel = {20, 20};
  mc.embedding_neuron = {4, 8, 8, 16};
  mc.axis_neuron = 3;
  mc.type_one_side = type_one_side && descriptor != "se_e3";  // se_e3's nets are per neighbour-type pair
  mc.embedding_resnet_dt = resnet_dt;
  mc.fitting_neuron = {12, 12};
  mc.fitting_resnet_dt = resnet_dt;
  mc.seed = 7;
  return mc;
}

// A model of `mc` with random weights and fixed statistics (column 0 shifted, so that empty slots count).
inline DeepPot small_model_of(const ModelConfig& mc) {
  DeepPot model(mc);
  const auto nnei = mc.statistics_slots();
  auto davg = torch::zeros({2, nnei, 4}, torch::kFloat64);
  auto dstd = torch::ones({2, nnei, 4}, torch::kFloat64);
  davg.select(2, 0)[0].fill_(0.21);
  davg.select(2, 0)[1].fill_(0.34);
  dstd.select(2, 0)[0].fill_(0.17);
  dstd.select(2, 0)[1].fill_(0.23);
  dstd.narrow(2, 1, 3)[0].fill_(0.11);
  dstd.narrow(2, 1, 3)[1].fill_(0.13);
  model->set_statistics(davg, dstd);
  return model;
}

inline DeepPot small_model(bool type_one_side, bool resnet_dt, c10::ScalarType precision = torch::kFloat64,
                           const std::string& descriptor = "se_e2_a") {
  auto mc = small_config(type_one_side, resnet_dt, descriptor);
  mc.precision = precision;
  for (auto& p : mc.parts) p.precision = precision;
  return small_model_of(mc);
}

}  // namespace deepkf::test
