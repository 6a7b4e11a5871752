#include "src/eval/LabelledErrors.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "src/core/Error.hpp"
#include "src/eval/FrameErrors.hpp"
#include "src/eval/SvgPlot.hpp"

namespace deepkf {

LabelledErrors labelled_errors(const LoadedModel& loaded, const Dataset& data, int batch,
                               std::int64_t max_frames) {
  const Potential model(loaded);
  LabelledErrors r;
  for (const auto& sys : data.systems) {
    ErrorMetrics m;
    const std::int64_t tested = max_frames > 0 ? std::min(max_frames, sys.nframes) : sys.nframes;
    const double n = static_cast<double>(sys.natoms);
    const auto per_frame = static_cast<std::size_t>(3 * sys.natoms);
    for (std::int64_t begin = 0; begin < tested; begin += batch) {
      std::vector<std::int64_t> frames;
      for (std::int64_t f = begin; f < std::min(tested, begin + batch); ++f) frames.push_back(f);
      const PotentialResult out = model.evaluate(sys, frames, {false, batch * sys.natoms});
      m.add(sys, frames, out);
      for (std::size_t k = 0; k < frames.size(); ++k) {
        const auto f = static_cast<std::size_t>(frames[k]);
        FrameResult fr;
        fr.system = sys.source;
        fr.frame = frames[k];
        fr.natoms = sys.natoms;
        fr.e_ref = sys.energy.empty() ? std::nan("") : sys.energy[f];
        fr.e_pred = out.energy[k];
        fr.f_rmse = fr.v_rmse_per_atom = std::nan("");
        r.e_ref.push_back(fr.e_ref / n);
        r.e_pred.push_back(fr.e_pred / n);
        if (sys.has_force()) {
          const double* ref = sys.force.data() + f * per_frame;
          const double* pred = out.force.data() + k * per_frame;
          fr.f_rmse = frame_errors(sys, frames[k], fr.e_pred, pred).force_rmse;
          fr.force_begin = static_cast<std::int64_t>(r.f_ref.size());
          r.f_ref.insert(r.f_ref.end(), ref, ref + per_frame);
          r.f_pred.insert(r.f_pred.end(), pred, pred + per_frame);
        }
        if (sys.has_virial()) {
          fr.v_ref.assign(sys.virial.begin() + 9 * f, sys.virial.begin() + 9 * f + 9);
          fr.v_pred.assign(out.virial.begin() + 9 * k, out.virial.begin() + 9 * k + 9);
          double sq = 0.0;
          for (std::size_t c = 0; c < 9; ++c)
            sq += (fr.v_pred[c] - fr.v_ref[c]) * (fr.v_pred[c] - fr.v_ref[c]) / (n * n);
          fr.v_rmse_per_atom = std::sqrt(sq / 9.0);
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
