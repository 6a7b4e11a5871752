#pragma once
// An independent reference of the DeepPot-SE energy for the model tests: per-atom loops over all periodic
// images, straight from the definition (docs/deep-potential.md), the nets read back from the model's named
// parameters, and the configurations it and the tests take.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "src/model/DeepPot.hpp"
#include "src/model/ModelConfig.hpp"

namespace deepkf::test {

// One configuration: natoms x 3 coordinates (A), types, a box (9 values, rows a b c) or none.
struct Config {
  std::vector<double> coord;
  std::vector<int> types;
  std::vector<double> box;  // empty: non-periodic
  std::int64_t natoms() const { return static_cast<std::int64_t>(types.size()); }
};

inline double switch_w(double r, double rc, double rs) {
  const double u = std::clamp((r - rs) / (rc - rs), 0.0, 1.0);
  return u * u * u * (-6 * u * u + 15 * u - 10) + 1;
}

// Dense layers of one net, read back from the model's named parameters ("<net>.w0", "<net>.b0", ...).
inline torch::Tensor reference_net(const DeepPot& model, const std::string& net, torch::Tensor x,
                                   bool fitting, bool resnet_dt, bool linear = false) {
  const auto params = model->named_parameters();
  for (int k = 0;; ++k) {
    const auto key = net + ".w" + std::to_string(k);
    if (!params.contains(key)) break;
    const auto w = params[key].detach().to(torch::kFloat64);
    const auto bias = net + ".b" + std::to_string(k);  // absent in a type embedding net without biases
    const bool last = fitting && !params.contains(net + ".w" + std::to_string(k + 1));
    const auto z =
        params.contains(bias) ? x.matmul(w) + params[bias].detach().to(torch::kFloat64) : x.matmul(w);
    if (last) return z;
    auto h = linear ? z : torch::tanh(z);
    const auto in = w.size(0), out = w.size(1);
    const bool has_dt = resnet_dt && (!fitting || (k > 0 && in == out));
    if (has_dt) h = h * params[net + ".dt" + std::to_string(k)].detach().to(torch::kFloat64);
    if (!fitting && out == 2 * in) {
      x = torch::cat({x, x}, -1) + h;
    } else if (out == in && (!fitting || k > 0)) {
      x = x + h;
    } else {
      x = h;
    }
  }
  return x;
}

// The type embedding's vector of every element, tebd_t = net(one-hot(t)): ntypes x Y (empty without one).
inline torch::Tensor reference_type_vectors(const DeepPot& model) {
  const auto& mc = model->config();
  if (!mc.type_embedded()) return torch::Tensor();
  return reference_net(model, "type_embedding", torch::eye(mc.ntypes(), torch::kFloat64), false,
                       mc.type_embedding.resnet_dt, mc.type_embedding.linear);
}

// Every image j + a A + b B + c C (a, b, c in [-m, m]; m = 0 without a box) within mc.rcut of atom i, but
// i itself: its distance r, its type and its row (s, s x/r, s y/r, s z/r) of R~.
struct BruteNeighbour {
  double r;
  int type;
  std::array<double, 4> row;
};
inline std::vector<BruteNeighbour> brute_neighbours(const Config& c, std::int64_t i, const ModelConfig& mc,
                                                    int m) {
  std::vector<BruteNeighbour> out;
  for (std::int64_t j = 0; j < c.natoms(); ++j) {
    for (int a = -m; a <= m; ++a) {
      for (int b = -m; b <= m; ++b) {
        for (int cc = -m; cc <= m; ++cc) {
          if (j == i && a == 0 && b == 0 && cc == 0) continue;
          double r[3];
          for (int d = 0; d < 3; ++d) {
            r[d] = c.coord[3 * j + d] - c.coord[3 * i + d];
            if (m > 0) r[d] += a * c.box[d] + b * c.box[3 + d] + cc * c.box[6 + d];
          }
          const double len = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
          if (len >= mc.rcut) continue;
          const double s = switch_w(len, mc.rcut, mc.rcut_smth) / len;
          out.push_back({len, c.types[j], {s, s * r[0] / len, s * r[1] / len, s * r[2] / len}});
        }
      }
    }
  }
  return out;
}

// Total energy by brute force: every image within rcut (images n in [-m, m]^3), per-type slots sorted by
// distance, padded with zero rows, normalised, embedded, contracted (se_e2_a: T^T T<; se_e2_r: the sum of
// the embeddings over the slots / (5 N_c)) and fitted atom by atom; a type embedding's nets as defined in
// docs/deep-potential.md.
// One descriptor `mc` (nets named prefix + "embedding_..."; statistics davg, dstd: its rows) of atom i.
inline torch::Tensor reference_descriptor(const DeepPot& model, const ModelConfig& mc,
                                          const std::string& prefix, const torch::Tensor& davg,
                                          const torch::Tensor& dstd, const Config& c, std::int64_t i, int m) {
  const int ti = c.types[i];
  // neighbours per type: (r, row of R~)
  std::vector<std::vector<std::pair<double, std::array<double, 4>>>> by_type(mc.sel.size());
  for (const auto& nb : brute_neighbours(c, i, mc, m)) by_type[nb.type].push_back({nb.r, nb.row});
  auto env = torch::zeros({mc.nnei(), 4}, torch::kFloat64);
  for (std::size_t t = 0; t < by_type.size(); ++t) {
    auto& list = by_type[t];
    std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    const auto off = mc.sel_offset(static_cast<int>(t));
    for (std::size_t k = 0; k < list.size() && static_cast<int>(k) < mc.sel[t]; ++k) {
      for (int d = 0; d < 4; ++d) env[off + static_cast<int64_t>(k)][d] = list[k].second[d];
    }
  }
  const auto env_hat = (env - davg[ti]) / dstd[ti];
  auto tmat = torch::zeros({4, mc.embedding_width()}, torch::kFloat64);
  auto gsum = torch::zeros({mc.embedding_width()}, torch::kFloat64);
  const auto tebd = reference_type_vectors(model);
  for (int t = 0; t < mc.ntypes() && !mc.three_body(); ++t) {
    const auto block = env_hat.narrow(0, mc.sel_offset(t), mc.sel[t]);
    const auto s = block.narrow(1, 0, 1);
    torch::Tensor g;
    if (mc.type_embedded()) {
      // one net for all pairs, with the types' vectors [tebd_t] or [tebd_t, tebd_ti]: G([s, types]), or
      // G(s) (1 + G_t(types)) when stripped
      const auto types = mc.type_one_side ? tebd[t] : torch::cat({tebd[t], tebd[ti]});
      if (mc.stripped()) {
        g = reference_net(model, "embedding_all", s, false, mc.embedding_resnet_dt) *
            (1.0 +
             reference_net(model, "embedding_types", types.unsqueeze(0), false, mc.embedding_resnet_dt));
      } else {
        g = reference_net(model, "embedding_all",
                          torch::cat({s, types.expand({s.size(0), types.size(0)})}, 1), false,
                          mc.embedding_resnet_dt);
      }
    } else {
      const std::string net =
          prefix + (mc.type_one_side ? "embedding_" + std::to_string(t)
                                     : "embedding_" + std::to_string(ti) + "_" + std::to_string(t));
      g = reference_net(model, net, s, false, mc.embedding_resnet_dt);
    }
    tmat += block.t().matmul(g);
    for (std::int64_t k = 0; k < g.size(0); ++k) gsum += g[k];
  }
  tmat /= static_cast<double>(mc.nnei());
  auto three = torch::zeros({1, mc.embedding_width()}, torch::kFloat64);
  for (int a = 0; a < mc.ntypes() && mc.three_body(); ++a) {
    for (int b = a; b < mc.ntypes(); ++b) {
      std::vector<double> g;
      for (int j = 0; j < mc.sel[a]; ++j) {
        for (int k = 0; k < mc.sel[b]; ++k) {
          double dot = 0;
          for (int d = 1; d < 4; ++d)
            dot += env_hat[mc.sel_offset(a) + j][d].item<double>() *
                   env_hat[mc.sel_offset(b) + k][d].item<double>();
          g.push_back(dot);
        }
      }
      const auto x = torch::tensor(g, torch::kFloat64).unsqueeze(1);
      const auto emb =
          reference_net(model, prefix + "embedding_" + std::to_string(a) + "_" + std::to_string(b), x, false,
                        mc.embedding_resnet_dt);
      three += (x * emb).sum(0, true) / static_cast<double>(mc.sel[a] * mc.sel[b]);
    }
  }
  return mc.three_body() ? three
         : mc.radial()   ? (gsum / (5.0 * static_cast<double>(mc.nnei()))).reshape({1, -1})
                         : tmat.t().matmul(tmat.narrow(1, 0, mc.axis_neuron)).reshape({1, -1});
}

// se_atten's reference (tests/model/AttentionReference.hpp) and se_e3_tebd's (ThreeBodyTebdReference.hpp).
inline double reference_attention_energy(const DeepPot& model, const Config& c, int images);
inline double reference_three_body_tebd_energy(const DeepPot& model, const Config& c, int images);

inline double reference_energy(const DeepPot& model, const Config& c, int images = 3) {
  const auto& mc = model->config();
  if (mc.attention_descriptor()) return reference_attention_energy(model, c, images);
  if (mc.three_body_tebd()) return reference_three_body_tebd_energy(model, c, images);
  const int m = c.box.empty() ? 0 : images;
  const auto davg = model->davg().to(torch::kFloat64);
  const auto dstd = model->dstd().to(torch::kFloat64);
  const auto bias = model->energy_bias().to(torch::kFloat64);
  const auto parts = mc.descriptor_parts();
  double total = 0;
  for (std::int64_t i = 0; i < c.natoms(); ++i) {
    const int ti = c.types[i];
    // a hybrid's descriptors side by side, each from its own rows of the statistics
    std::vector<torch::Tensor> ds;
    std::int64_t row = 0;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const std::string prefix = mc.hybrid() ? "d" + std::to_string(k) + "_" : "";
      const auto rows = parts[k].nnei();
      ds.push_back(reference_descriptor(model, parts[k], prefix, davg.narrow(1, row, rows),
                                        dstd.narrow(1, row, rows), c, i, m));
      row += rows;
    }
    // one fitting net per type, or under a type embedding one for all, reading [D_i, tebd_ti]
    if (mc.type_embedded()) ds.push_back(reference_type_vectors(model)[ti].unsqueeze(0));
    const auto e = reference_net(model, mc.type_embedded() ? "fitting_all" : "fitting_" + std::to_string(ti),
                                 torch::cat(ds, 1), true, mc.fitting_resnet_dt);
    total += e.item<double>() + bias[ti].item<double>();
  }
  return total;
}

}  // namespace deepkf::test

#include "tests/model/AttentionReference.hpp"
#include "tests/model/ThreeBodyTebdReference.hpp"
