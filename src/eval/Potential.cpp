#include "src/eval/Potential.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "src/core/Error.hpp"
#include "src/geometry/NeighborList.hpp"
#include "src/model/Batch.hpp"

namespace deepkf {

namespace {

torch::Device parse_device(const std::string& name) {
  try {
    const torch::Device device(name);
    if (device.is_cuda() && !torch::cuda::is_available())
      throw ConfigError("device '" + name + "': this machine or this build of deepkf has no CUDA device");
    if (!device.is_cpu() && !device.is_cuda())
      throw ConfigError("device '" + name + "': deepkf evaluates on 'cpu' or 'cuda[:N]'");
    return device;
  } catch (const c10::Error&) {
    throw ConfigError("device '" + name + "' is not a device name; give 'cpu', 'cuda' or 'cuda:N'");
  }
}

// Throws ModelError naming the frame and the quantity when a prediction of `out` is not finite; `frames`
// are the frames' indices in `source`.
void check_finite_prediction(const ModelOutput& out, const std::vector<std::int64_t>& frames,
                             const std::string& source) {
  const std::pair<const char*, const torch::Tensor*> parts[] = {
      {"energy", &out.energy}, {"forces", &out.force}, {"virial", &out.virial}};
  for (const auto& [name, tensor] : parts) {
    if (!tensor->defined() || tensor->numel() == 0) continue;
    // Per frame: all values finite?
    const auto ok = torch::isfinite(tensor->detach()).reshape({tensor->size(0), -1}).all(1).to(torch::kCPU);
    for (std::size_t k = 0; k < frames.size(); ++k) {
      if (ok[static_cast<std::int64_t>(k)].item<bool>()) continue;
      throw ModelError(
          fmt::format("the model predicts non-finite {} for frame {} of {}; the model file holds "
                      "non-finite weights or the frame is far outside what it was trained on",
                      name, frames[k], source));
    }
  }
}

double det3(const double* m) {
  return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
         m[2] * (m[3] * m[7] - m[4] * m[6]);
}

}  // namespace

System frames_as_system(const PotentialFrames& in, const ModelConfig& config) {
  const auto nf = in.nframes, na = in.natoms;
  if (nf < 1 || na < 1)
    throw DataError(
        fmt::format("{} frames of {} atoms: give at least one frame of at least one atom", nf, na));
  if (static_cast<std::int64_t>(in.coord.size()) != nf * na * 3)
    throw DataError(fmt::format("coordinates hold {} values; {} frames of {} atoms need {}", in.coord.size(),
                                nf, na, nf * na * 3));
  if (!in.box.empty() && static_cast<std::int64_t>(in.box.size()) != nf * 9)
    throw DataError(
        fmt::format("cells hold {} values; {} frames need {} (9 per frame)", in.box.size(), nf, nf * 9));
  if (static_cast<std::int64_t>(in.atom_types.size()) != na)
    throw DataError(fmt::format("{} atom types for {} atoms", in.atom_types.size(), na));
  for (std::size_t i = 0; i < in.atom_types.size(); ++i) {
    const int t = in.atom_types[i];
    if (t < 0 || t >= config.ntypes())
      throw DataError(fmt::format("atom {} has type {}; the model's types are 0 to {} ({})", i, t,
                                  config.ntypes() - 1, fmt::join(config.type_map, ", ")));
  }
  for (std::size_t k = 0; k < in.coord.size(); ++k)
    if (!std::isfinite(in.coord[k]))
      throw DataError(fmt::format("frame {} atom {}: coordinate {} is not finite", k / (3 * na), (k / 3) % na,
                                  in.coord[k]));
  for (std::int64_t f = 0; f < (in.box.empty() ? 0 : nf); ++f) {
    const double* cell = in.box.data() + 9 * f;
    const bool finite = std::all_of(cell, cell + 9, [](double v) { return std::isfinite(v); });
    if (!finite || std::abs(det3(cell)) < 1e-6)
      throw DataError(fmt::format("frame {}: the cell [{}] is {}", f, fmt::join(cell, cell + 9, ", "),
                                  finite ? "degenerate (volume below 1e-6 A^3)" : "not finite"));
  }
  System s;
  s.source = "frames given";
  s.type_map = config.type_map;
  s.atom_types = in.atom_types;
  s.periodic = !in.box.empty();
  s.nframes = nf;
  s.natoms = na;
  s.coord = in.coord;
  s.box = in.box;
  return s;
}

namespace {

void append(std::vector<double>& to, const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  to.insert(to.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

Potential::Potential(const std::string& path, const std::string& device)
    : path_(path), device_(parse_device(device)) {
  model_ = load_model(path, device_);
  model_.model->eval();
}

Potential::Potential(LoadedModel loaded, std::string name)
    : path_(std::move(name)), model_(std::move(loaded)) {
  const auto params = model_.model->parameters();
  if (!params.empty()) device_ = params.front().device();
}

PotentialResult Potential::evaluate(const PotentialFrames& frames, const PotentialOptions& options) const {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(std::max<std::int64_t>(0, frames.nframes)));
  std::iota(ids.begin(), ids.end(), std::int64_t{0});
  return evaluate_frames(frames_as_system(frames, model_.config), ids, options, ids,
                         "the frames given to " + (path_.empty() ? std::string("the model") : path_));
}

PotentialResult Potential::evaluate(const System& system, const std::vector<std::int64_t>& frames,
                                    const PotentialOptions& options,
                                    const std::vector<std::int64_t>& numbers) const {
  return evaluate_frames(system, frames, options, numbers.empty() ? frames : numbers, system.source);
}

PotentialResult Potential::evaluate_frames(const System& system, const std::vector<std::int64_t>& frames,
                                           const PotentialOptions& options,
                                           const std::vector<std::int64_t>& numbers,
                                           const std::string& source) const {
  if (numbers.size() != frames.size())
    throw std::invalid_argument("Potential::evaluate: one number per frame");
  const ModelConfig& config = model_.config;
  DeepPot model = model_.model;  // a handle: evaluation is not const
  const auto nframes = static_cast<std::int64_t>(frames.size());
  const std::int64_t group = options.frames_per_group(system.natoms);
  PotentialResult r;
  for (std::int64_t begin = 0; begin < nframes; begin += group) {
    const auto end = std::min(nframes, begin + group);
    const std::vector<std::int64_t> ids(frames.begin() + begin, frames.begin() + end);
    const Batch b = make_batch(system, ids, config, device_, config.precision);
    const ModelOutput out =
        model->evaluate(b.coord, b.atype, b.nlist, b.shift, EvalOptions::with_atom_virial(options.atomic));
    check_finite_prediction(out, {numbers.begin() + begin, numbers.begin() + end}, source);
    append(r.energy, out.energy);
    append(r.force, out.force);
    append(r.virial, out.virial);
    if (options.atomic) {
      append(r.atom_energy, out.atom_energy);
      append(r.atom_virial, out.atom_virial);
    }
    r.beyond_table += out.beyond_table;
  }
  return r;
}

PotentialResult Potential::evaluate(const NeighbourAtoms& atoms, const PotentialOptions& options) const {
  const ModelConfig& config = model_.config;
  // all 0 for a mixed-type descriptor
  const auto in_list = list_types(config, std::vector<int>(atoms.types, atoms.types + atoms.natoms));
  const auto nl = sort_neighbors(atoms.coord, in_list.data(), atoms.ncentre, atoms.offset, atoms.neigh,
                                 config.rcut, config.sel);
  const std::vector<std::int64_t> types64(atoms.types, atoms.types + atoms.natoms);
  const auto on = torch::TensorOptions().dtype(config.precision).device(device_);
  const auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
  const auto cpu_long = torch::TensorOptions().dtype(torch::kInt64);
  // coord: 1 x natoms x 3 (A); atype: 1 x natoms; nlist: 1 x ncentre x nnei
  const auto coord = torch::from_blob(const_cast<double*>(atoms.coord), {1, atoms.natoms, 3}, cpu64)
                         .to(on, /*non_blocking=*/false, /*copy=*/true);
  const auto atype = torch::from_blob(const_cast<std::int64_t*>(types64.data()), {1, atoms.natoms}, cpu_long)
                         .to(device_, false, true);
  const auto nlist =
      torch::from_blob(const_cast<std::int64_t*>(nl.index.data()), {1, atoms.ncentre, nl.nnei}, cpu_long)
          .to(device_, false, true);
  DeepPot model = model_.model;  // a handle: evaluation is not const
  const ModelOutput out =
      model->evaluate(coord, atype, nlist, torch::Tensor(), EvalOptions::with_atom_virial(options.atomic));
  PotentialResult r;
  append(r.energy, out.energy);
  append(r.atom_energy, out.atom_energy);
  append(r.force, out.force);
  append(r.virial, out.virial);
  if (options.atomic) append(r.atom_virial, out.atom_virial);
  r.beyond_table = out.beyond_table;
  return r;
}

}  // namespace deepkf
