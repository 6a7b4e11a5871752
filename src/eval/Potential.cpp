#include "src/eval/Potential.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"
#include "src/eval/LabelledErrors.hpp"
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

PotentialResult Potential::evaluate(const PotentialFrames& frames, const PotentialOptions& options) const {
  const ModelConfig& config = model_.config;
  const System system = frames_as_system(frames, config);
  DeepPot model = model_.model;  // a handle: evaluation is not const
  const std::int64_t group = std::max<std::int64_t>(1, options.atoms_per_group / frames.natoms);
  PotentialResult r;
  for (std::int64_t begin = 0; begin < frames.nframes; begin += group) {
    std::vector<std::int64_t> ids;
    for (auto f = begin; f < std::min(frames.nframes, begin + group); ++f) ids.push_back(f);
    const Batch b = make_batch(system, ids, config, device_, config.precision);
    const ModelOutput out =
        model->evaluate(b.coord, b.atype, b.nlist, b.shift, EvalOptions::with_atom_virial(options.atomic));
    check_finite_prediction(out, ids, "the frames given to " + path_);
    append(r.energy, out.energy);
    append(r.force, out.force);
    append(r.virial, out.virial);
    if (options.atomic) {
      append(r.atom_energy, out.atom_energy);
      append(r.atom_virial, out.atom_virial);
    }
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
