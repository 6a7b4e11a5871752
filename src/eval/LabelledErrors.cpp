#include "src/eval/LabelledErrors.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "src/core/Error.hpp"
#include "src/eval/SvgPlot.hpp"
#include "src/model/Batch.hpp"

namespace deepkf {

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

LabelledErrors labelled_errors(const LoadedModel& loaded, const Dataset& data, int batch,
                               std::int64_t max_frames) {
  const ModelConfig& config = loaded.config;
  DeepPot model = loaded.model;  // a handle: evaluation is not const
  LabelledErrors r;
  for (const auto& sys : data.systems) {
    ErrorMetrics m;
    const std::int64_t tested = max_frames > 0 ? std::min(max_frames, sys.nframes) : sys.nframes;
    for (std::int64_t begin = 0; begin < tested; begin += batch) {
      std::vector<std::int64_t> frames;
      for (std::int64_t f = begin; f < std::min(tested, begin + batch); ++f) frames.push_back(f);
      const Batch b = make_batch(sys, frames, config, torch::kCPU, config.precision);
      const ModelOutput out = model->evaluate(b.coord, b.atype, b.nlist, b.shift);
      check_finite_prediction(out, frames, sys.source);
      m.add(out, b);
      const auto pe = out.energy.to(torch::kFloat64).contiguous();
      const auto re = b.energy.to(torch::kFloat64).contiguous();
      for (std::size_t k = 0; k < frames.size(); ++k) {
        const auto i = static_cast<std::int64_t>(k);
        FrameResult fr;
        fr.system = sys.source;
        fr.frame = frames[k];
        fr.natoms = sys.natoms;
        fr.e_ref = re[i].item<double>();
        fr.e_pred = pe[i].item<double>();
        fr.f_rmse = fr.v_rmse_per_atom = std::nan("");
        const double n = static_cast<double>(sys.natoms);
        r.e_ref.push_back(fr.e_ref / n);
        r.e_pred.push_back(fr.e_pred / n);
        if (b.has_force) {
          const auto ref = b.force[i].to(torch::kFloat64).contiguous().reshape({-1});
          const auto pred = out.force[i].to(torch::kFloat64).contiguous().reshape({-1});
          fr.f_rmse = (pred - ref).square().mean().sqrt().item<double>();
          fr.force_begin = static_cast<std::int64_t>(r.f_ref.size());
          r.f_ref.insert(r.f_ref.end(), ref.data_ptr<double>(), ref.data_ptr<double>() + ref.numel());
          r.f_pred.insert(r.f_pred.end(), pred.data_ptr<double>(), pred.data_ptr<double>() + pred.numel());
        }
        if (b.has_virial) {
          const auto ref = b.virial[i].to(torch::kFloat64).contiguous().reshape({-1});
          const auto pred = out.virial[i].to(torch::kFloat64).contiguous().reshape({-1});
          fr.v_rmse_per_atom = ((pred - ref) / n).square().mean().sqrt().item<double>();
          fr.v_ref.assign(ref.data_ptr<double>(), ref.data_ptr<double>() + ref.numel());
          fr.v_pred.assign(pred.data_ptr<double>(), pred.data_ptr<double>() + pred.numel());
        }
        r.frames.push_back(fr);
      }
    }
    r.systems.push_back({sys.source, tested, m, sys.atom_types});
    r.total.merge(m);
    r.total_frames += tested;
  }
  return r;
}

std::string frames_table(const LabelledErrors& result) {
  std::string table = "# system\tframe\tnatoms\te_ref\te_pred\tde_per_atom\tf_rmse\tv_rmse_per_atom\n";
  for (const auto& f : result.frames) {
    table += fmt::format("{}\t{}\t{}\t{:.10g}\t{:.10g}\t{:.6e}\t{:.6e}\t{:.6e}\n", f.system, f.frame,
                         f.natoms, f.e_ref, f.e_pred, (f.e_pred - f.e_ref) / static_cast<double>(f.natoms),
                         f.f_rmse, f.v_rmse_per_atom);
  }
  return table;
}

std::string parity_svg(const LabelledErrors& result) {
  // One colour per system where there are a few (the palette has six), with each system's RMSE; otherwise
  // one series of all points with the overall RMSE.
  const bool by_system = result.systems.size() >= 2 && result.systems.size() <= kParitySystemColours;
  std::vector<PlotSeries> energy, force;
  if (by_system) {
    for (const auto& sys : result.systems) {
      PlotSeries e{fmt::format("{}: {:.2e} eV/atom", std::filesystem::path(sys.source).filename().string(),
                               sys.metrics.rmse_e()),
                   {},
                   {},
                   true,
                   ""};
      PlotSeries f{fmt::format("{}: {:.2e} eV/A", std::filesystem::path(sys.source).filename().string(),
                               sys.metrics.rmse_f()),
                   {},
                   {},
                   true,
                   ""};
      for (std::size_t i = 0; i < result.frames.size(); ++i) {
        const FrameResult& fr = result.frames[i];
        if (fr.system != sys.source) continue;
        e.x.push_back(result.e_ref[i]);
        e.y.push_back(result.e_pred[i]);
        if (fr.force_begin < 0) continue;
        const auto begin = static_cast<std::size_t>(fr.force_begin);
        const auto end = begin + 3 * static_cast<std::size_t>(fr.natoms);
        f.x.insert(f.x.end(), result.f_ref.begin() + begin, result.f_ref.begin() + end);
        f.y.insert(f.y.end(), result.f_pred.begin() + begin, result.f_pred.begin() + end);
      }
      energy.push_back(std::move(e));
      if (!f.x.empty()) force.push_back(std::move(f));
    }
  } else {
    energy.push_back(
        {fmt::format("RMSE {:.2e} eV/atom", result.total.rmse_e()), result.e_ref, result.e_pred, true, ""});
    if (!result.f_ref.empty())
      force.push_back(
          {fmt::format("RMSE {:.2e} eV/A", result.total.rmse_f()), result.f_ref, result.f_pred, true, ""});
  }
  std::vector<PlotPanel> panels = {
      {"energy per atom", "reference (eV/atom)", "prediction (eV/atom)", false, true, energy}};
  if (!force.empty())
    panels.push_back({"force components", "reference (eV/A)", "prediction (eV/A)", false, true, force});
  return render_svg(panels);
}

}  // namespace deepkf
