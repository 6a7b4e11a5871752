#include "src/model/Batch.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "src/core/Error.hpp"
#include "src/geometry/NeighborList.hpp"

namespace deepkf {

namespace {

torch::Tensor from_doubles(const double* data, std::vector<int64_t> sizes) {
  return torch::from_blob(const_cast<double*>(data), sizes, torch::kFloat64).clone();
}

}  // namespace

torch::Tensor slot_types(const torch::Tensor& atype, const torch::Tensor& nlist) {
  const auto nf = nlist.size(0);
  const auto gathered = atype.gather(1, nlist.clamp_min(0).reshape({nf, -1})).view(nlist.sizes());
  return torch::where(nlist.ge(0), gathered, torch::full({}, -1, gathered.options()));
}

std::int64_t filled_slots(const torch::Tensor& filled) {
  const auto used = torch::nonzero(filled.any(0));
  return used.numel() == 0 ? 0 : used.max().item<std::int64_t>() + 1;
}

std::vector<int> list_types(const ModelConfig& config, std::vector<int> types) {
  if (config.mixed_types()) std::fill(types.begin(), types.end(), 0);
  return types;
}

Batch make_batch(const System& system, const std::vector<std::int64_t>& frames, const ModelConfig& config,
                 torch::Device device, torch::Dtype dtype) {
  const auto natoms = system.natoms;
  const auto nnei = config.nnei();
  const auto nb = static_cast<std::int64_t>(frames.size());
  // the System's type index -> the model's
  std::vector<int> types(static_cast<std::size_t>(natoms));
  for (std::int64_t i = 0; i < natoms; ++i) {
    const int t = system.atom_types[static_cast<std::size_t>(i)];
    if (t < 0 || t >= static_cast<int>(system.type_map.size())) {
      throw DataError("atom " + std::to_string(i) + " of " + system.source + " has type " +
                      std::to_string(t) + " outside its type map of " +
                      std::to_string(system.type_map.size()) + " names");
    }
    const auto& name = system.type_map[static_cast<std::size_t>(t)];
    const auto it = std::find(config.type_map.begin(), config.type_map.end(), name);
    if (it == config.type_map.end()) {
      throw DataError("element '" + name + "' of " + system.source + " is not in the model's type_map");
    }
    types[static_cast<std::size_t>(i)] = static_cast<int>(it - config.type_map.begin());
  }

  Batch b;
  b.natoms = natoms;
  b.frames = frames;
  b.has_force = system.has_force();
  b.has_virial = system.has_virial();
  b.max_count.assign(config.sel.size(), 0);
  const auto in_list = list_types(config, types);
  std::vector<std::int64_t> nlist(static_cast<std::size_t>(nb * natoms * nnei));
  std::vector<double> shift(static_cast<std::size_t>(nb * natoms * nnei * 3));
  std::vector<double> coord, box, energy, force, virial;
  for (std::int64_t k = 0; k < nb; ++k) {
    const auto f = frames[static_cast<std::size_t>(k)];
    if (f < 0 || f >= system.nframes) {
      throw DataError("frame " + std::to_string(f) + " requested from " + system.source + ", which has " +
                      std::to_string(system.nframes) + " frames");
    }
    const double* x = system.coord.data() + f * natoms * 3;
    const double* h = system.periodic ? system.box.data() + f * 9 : nullptr;
    const auto nl = build_neighbor_list(x, natoms, in_list.data(), h, config.rcut, config.sel);
    std::copy(nl.index.begin(), nl.index.end(), nlist.begin() + k * natoms * nnei);
    std::copy(nl.shift.begin(), nl.shift.end(), shift.begin() + k * natoms * nnei * 3);
    b.ndropped += nl.ndropped;
    for (std::size_t t = 0; t < b.max_count.size() && t < nl.max_count.size(); ++t) {
      b.max_count[t] = std::max(b.max_count[t], nl.max_count[t]);
    }
    coord.insert(coord.end(), x, x + natoms * 3);
    if (h != nullptr) box.insert(box.end(), h, h + 9);
    if (!system.energy.empty()) energy.push_back(system.energy[static_cast<std::size_t>(f)]);
    if (b.has_force)
      force.insert(force.end(), system.force.begin() + f * natoms * 3,
                   system.force.begin() + (f + 1) * natoms * 3);
    if (b.has_virial)
      virial.insert(virial.end(), system.virial.begin() + f * 9, system.virial.begin() + (f + 1) * 9);
  }
  const auto to = [&](const torch::Tensor& t) { return t.to(device, dtype); };
  b.coord = to(from_doubles(coord.data(), {nb, natoms, 3}));
  b.atype = torch::tensor(std::vector<int64_t>(types.begin(), types.end()), torch::kInt64)
                .view({1, natoms})
                .expand({nb, natoms})
                .contiguous()
                .to(device);
  b.nlist = torch::from_blob(nlist.data(), {nb, natoms, nnei}, torch::kInt64).clone().to(device);
  b.shift = to(from_doubles(shift.data(), {nb, natoms, nnei, 3}));
  if (!box.empty()) b.box = to(from_doubles(box.data(), {nb, 9}));
  if (!energy.empty()) b.energy = to(from_doubles(energy.data(), {nb}));
  if (b.has_force) b.force = to(from_doubles(force.data(), {nb, natoms, 3}));
  if (b.has_virial) b.virial = to(from_doubles(virial.data(), {nb, 9}));
  return b;
}

Batch geometry_in(const Batch& b, torch::Dtype dtype) {
  Batch out = b;
  const auto to = [&](const torch::Tensor& t) { return t.defined() ? t.to(dtype) : t; };
  out.coord = to(b.coord);
  out.shift = to(b.shift);
  out.box = to(b.box);
  return out;
}

}  // namespace deepkf
