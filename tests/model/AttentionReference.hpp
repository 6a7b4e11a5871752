#pragma once
// se_atten's energy by brute force, straight from docs/deep-potential.md ("se_atten"): per atom, the
// nearest sel neighbours of any type over all periodic images, then the type-embedded embedding, the
// attention layers and the descriptor written out as loops over slots, the nets read back from the model's
// named parameters. Included by ModelReference.hpp, whose reference_energy calls it.
#include "tests/model/ModelReference.hpp"

namespace deepkf::test {

// A named parameter or buffer of the model, in float64.
inline torch::Tensor model_tensor(const DeepPot& model, const std::string& name) {
  const auto params = model->named_parameters();
  if (params.contains(name)) return params[name].detach().to(torch::kFloat64);
  return model->named_buffers()[name].detach().to(torch::kFloat64);
}

// One attention layer on the rows x (N x M) of one centre; real, sw: per slot; rhat: N x 3.
inline torch::Tensor reference_attention_layer(const DeepPot& model, const ModelConfig& mc, int l,
                                               const torch::Tensor& x, const std::vector<bool>& real,
                                               const std::vector<double>& sw, const torch::Tensor& rhat) {
  const auto& at = mc.attention;
  const std::string k = std::to_string(l);
  const auto w_in = model_tensor(model, "attention.w_in" + k),
             b_in = model_tensor(model, "attention.b_in" + k);
  const auto w_out = model_tensor(model, "attention.w_out" + k);
  const auto b_out = model_tensor(model, "attention.b_out" + k);
  const auto ln_w = model_tensor(model, "attention.ln_w" + k),
             ln_b = model_tensor(model, "attention.ln_b" + k);
  const auto n = x.size(0), m = x.size(1), a = static_cast<std::int64_t>(at.width);
  const auto qkv = x.matmul(w_in) + b_in;
  std::vector<std::vector<double>> q(n), kk(n), v(n);
  for (std::int64_t j = 0; j < n; ++j) {
    for (auto [vec, off] : {std::pair{&q, 0L}, std::pair{&kk, a}, std::pair{&v, 2 * a}}) {
      double norm = 0;
      for (std::int64_t c = 0; c < a; ++c) norm += std::pow(qkv[j][off + c].item<double>(), 2);
      norm = at.normalize ? std::sqrt(norm) : 1.0;
      for (std::int64_t c = 0; c < a; ++c) (*vec)[j].push_back(qkv[j][off + c].item<double>() / norm);
    }
  }
  const double alpha = at.temperature ? *at.temperature : 1.0 / std::sqrt(a * at.scaling_factor);
  auto out = torch::zeros({n, a}, torch::kFloat64);
  for (std::int64_t j = 0; j < n; ++j) {
    if (!real[j]) continue;  // an empty query slot takes no weights
    std::vector<double> logit(n), weight(n);
    double top = -1e300;
    for (std::int64_t t = 0; t < n; ++t) {
      double dot = 0;
      for (std::int64_t c = 0; c < a; ++c) dot += q[j][c] * kk[t][c];
      logit[t] = alpha * dot;
      if (at.smooth) logit[t] = (logit[t] + 20.0) * sw[j] * sw[t] - 20.0;
      if (at.smooth || real[t]) top = std::max(top, logit[t]);
    }
    double total = 0;
    for (std::int64_t t = 0; t < n; ++t) {
      weight[t] = at.smooth || real[t] ? std::exp(logit[t] - top) : 0.0;
      total += weight[t];
    }
    for (std::int64_t t = 0; t < n; ++t) {
      double w = weight[t] / total;
      if (at.smooth) w *= sw[j] * sw[t];
      if (at.dotr) w *= rhat[j].dot(rhat[t]).item<double>();
      for (std::int64_t c = 0; c < a; ++c) out[j][c] += w * v[t][c];
    }
  }
  auto y = x + out.matmul(w_out) + b_out;
  // layer norm of each row over its M numbers (biased variance)
  const auto mean = y.mean(1, true);
  const auto var = (y - mean).square().sum(1, true) / static_cast<double>(m);
  return (y - mean) / (var + at.ln_eps).sqrt() * ln_w + ln_b;
}

// The slots of centre i in a list of the nearest nnei neighbours of any type, nearest first: the rows
// normalised (padding rows zero before), which slots are real, the switch, the type vectors (0 for padding).
struct MixedSlots {
  torch::Tensor env_hat;  // nnei x 4
  std::vector<bool> real;
  std::vector<double> sw;
  torch::Tensor types;  // nnei x Y
};
inline MixedSlots mixed_slots(const DeepPot& model, const Config& c, std::int64_t i, int images,
                              const torch::Tensor& tebd) {
  const auto& mc = model->config();
  const auto nnei = mc.nnei();
  auto found = brute_neighbours(c, i, mc, images);
  std::sort(found.begin(), found.end(), [](const auto& p, const auto& q) { return p.r < q.r; });
  auto env = torch::zeros({nnei, 4}, torch::kFloat64);
  MixedSlots s{{},
               std::vector<bool>(static_cast<std::size_t>(nnei), false),
               std::vector<double>(static_cast<std::size_t>(nnei), 0.0),
               torch::zeros({nnei, tebd.size(1)}, torch::kFloat64)};
  for (std::size_t k = 0; k < found.size() && static_cast<std::int64_t>(k) < nnei; ++k) {
    for (int d = 0; d < 4; ++d) env[k][d] = found[k].row[d];
    s.real[k] = true;
    s.sw[k] = switch_w(found[k].r, mc.rcut, mc.rcut_smth);
    s.types[k] = tebd[found[k].type];
  }
  const auto ti = c.types[static_cast<std::size_t>(i)];
  s.env_hat = (env - model->davg().to(torch::kFloat64)[ti]) / model->dstd().to(torch::kFloat64)[ti];
  return s;
}

inline double reference_attention_energy(const DeepPot& model, const Config& c, int images) {
  const auto& mc = model->config();
  const int m = c.box.empty() ? 0 : images;
  const auto n = c.natoms();
  const auto nnei = mc.nnei();
  const auto tebd = reference_type_vectors(model);
  const auto y = tebd.size(1);
  const auto bias = model->energy_bias().to(torch::kFloat64);
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const int ti = c.types[i];
    const auto [env_hat, real, sw, types] = mixed_slots(model, c, i, m, tebd);
    const auto s = env_hat.narrow(1, 0, 1);
    torch::Tensor g;
    const auto pair = mc.type_one_side ? types : torch::cat({types, tebd[ti].expand({nnei, y})}, 1);
    if (mc.stripped()) {
      auto gt = reference_net(model, "embedding_types", pair, false, mc.embedding_resnet_dt);
      if (mc.attention.smooth) gt = gt * torch::tensor(sw, torch::kFloat64).unsqueeze(1);
      g = reference_net(model, "embedding_all", s, false, mc.embedding_resnet_dt) * (1.0 + gt);
    } else {
      g = reference_net(model, "embedding_all", torch::cat({s, pair}, 1), false, mc.embedding_resnet_dt);
    }
    // r^_j from the normalised rows (0 for padding)
    auto rhat = env_hat.narrow(1, 1, 3).clone();
    for (std::int64_t k = 0; k < nnei; ++k) {
      const double norm = rhat[k].norm().item<double>();
      rhat[k] = norm > 0 ? rhat[k] / norm : rhat[k];
    }
    for (int l = 0; l < mc.attention.layers; ++l)
      g = reference_attention_layer(model, mc, l, g, real, sw, rhat);
    const auto tmat = env_hat.t().matmul(g) / static_cast<double>(nnei);
    auto d = tmat.t().matmul(tmat.narrow(1, 0, mc.axis_neuron)).reshape({1, -1});
    if (mc.attention.concat_output_tebd) d = torch::cat({d, tebd[ti].unsqueeze(0)}, 1);
    const auto e = reference_net(model, "fitting_all", d, true, mc.fitting_resnet_dt);
    total += e.item<double>() + bias[ti].item<double>();
  }
  return total;
}

}  // namespace deepkf::test
