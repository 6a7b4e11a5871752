#pragma once
// se_e3_tebd's energy by brute force, straight from docs/deep-potential.md ("se_e3_tebd"): per atom, the
// nearest sel neighbours of any type over all periodic images, then a loop over every ordered pair of
// slots (j, k), padding included, the nets read back from the model's named parameters. Included by
// ModelReference.hpp, whose reference_energy calls it.
#include "tests/model/ModelReference.hpp"

namespace deepkf::test {

inline double reference_three_body_tebd_energy(const DeepPot& model, const Config& c, int images) {
  const auto& mc = model->config();
  const int m = c.box.empty() ? 0 : images;
  const auto nnei = mc.nnei();
  const auto tebd = reference_type_vectors(model);
  const auto bias = model->energy_bias().to(torch::kFloat64);
  double total = 0;
  for (std::int64_t i = 0; i < c.natoms(); ++i) {
    const int ti = c.types[i];
    // the slots (AttentionReference.hpp): rows normalised, the switch, the type vectors (0 for padding)
    const auto [env_hat, real, sw, types] = mixed_slots(model, c, i, m, tebd);
    // every ordered pair (j, k): g_jk = r^_j . r^_k, the net's input, the gate w_j w_k
    std::vector<double> g, gate;
    std::vector<torch::Tensor> pair_types;
    for (std::int64_t j = 0; j < nnei; ++j) {
      for (std::int64_t k = 0; k < nnei; ++k) {
        double dot = 0;
        for (int d = 1; d < 4; ++d) dot += env_hat[j][d].item<double>() * env_hat[k][d].item<double>();
        g.push_back(dot);
        gate.push_back(sw[j] * sw[k]);
        pair_types.push_back(torch::cat({types[j], types[k]}));
      }
    }
    const auto x = torch::tensor(g, torch::kFloat64).unsqueeze(1);
    const auto tt = torch::stack(pair_types);
    torch::Tensor emb;
    if (mc.stripped()) {
      auto gt = reference_net(model, "embedding_types", tt, false, mc.embedding_resnet_dt);
      if (mc.attention.smooth) gt = gt * torch::tensor(gate, torch::kFloat64).unsqueeze(1);
      emb = reference_net(model, "embedding_all", x, false, mc.embedding_resnet_dt) * (1.0 + gt);
    } else {
      emb = reference_net(model, "embedding_all", torch::cat({x, tt}, 1), false, mc.embedding_resnet_dt);
    }
    auto d = (x * emb).sum(0, true) / static_cast<double>(nnei * nnei);
    if (mc.attention.concat_output_tebd) d = torch::cat({d, tebd[ti].unsqueeze(0)}, 1);
    const auto e = reference_net(model, "fitting_all", d, true, mc.fitting_resnet_dt);
    total += e.item<double>() + bias[ti].item<double>();
  }
  return total;
}

}  // namespace deepkf::test
