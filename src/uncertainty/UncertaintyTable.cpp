#include "src/uncertainty/UncertaintyTable.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <utility>

#include "src/eval/SvgPlot.hpp"
#include "src/uncertainty/RankAgreement.hpp"

namespace deepkf {

namespace {

using Getter = std::function<double(const UncertaintyRow&)>;

// The predicted-uncertainty columns the rows carry, by name.
std::vector<std::pair<std::string, Getter>> predictors(const UncertaintyColumns& c) {
  std::vector<std::pair<std::string, Getter>> out;
  if (c.kalman) {
    out.emplace_back("sigma_e", [](const UncertaintyRow& r) { return r.sigma_e; });
    out.emplace_back("sigma_f_max", [](const UncertaintyRow& r) { return r.sigma_f_max; });
    out.emplace_back("sigma_f_mean", [](const UncertaintyRow& r) { return r.sigma_f_mean; });
    out.emplace_back("sigma_f_rms", [](const UncertaintyRow& r) { return r.sigma_f_rms; });
  }
  if (c.ensemble) {
    out.emplace_back("max_devi_v", [](const UncertaintyRow& r) { return r.deviation.max_devi_v; });
    out.emplace_back("max_devi_f", [](const UncertaintyRow& r) { return r.deviation.max_devi_f; });
    out.emplace_back("avg_devi_f", [](const UncertaintyRow& r) { return r.deviation.avg_devi_f; });
  }
  return out;
}

std::vector<double> column(const std::vector<UncertaintyRow>& rows, const Getter& get) {
  std::vector<double> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(get(r));
  return v;
}

std::string value(double v) { return std::isnan(v) ? std::string("nan") : fmt::format("{:.6e}", v); }

std::string cell(double v) {
  return std::isnan(v) ? fmt::format("{:>11}", "-") : fmt::format("{:>11.3f}", v);
}

}  // namespace

std::string uncertainty_table(const std::vector<UncertaintyRow>& rows, const UncertaintyColumns& columns) {
  std::string table = "system\tframe\ttimestep\tnatoms";
  if (columns.kalman) table += "\tsigma_e\tsigma_f_max\tsigma_f_mean\tsigma_f_rms";
  if (columns.ensemble) table += "\tmax_devi_v\tmin_devi_v\tavg_devi_v\tmax_devi_f\tmin_devi_f\tavg_devi_f";
  if (columns.errors) table += "\terr_e\terr_f_rmse\terr_f_max";
  table += "\n";
  for (const auto& r : rows) {
    table += fmt::format("{}\t{}\t{}\t{}", r.system, r.frame,
                         r.timestep >= 0 ? std::to_string(r.timestep) : "-", r.natoms);
    if (columns.kalman)
      table += fmt::format("\t{}\t{}\t{}\t{}", value(r.sigma_e), value(r.sigma_f_max), value(r.sigma_f_mean),
                           value(r.sigma_f_rms));
    if (columns.ensemble) {
      const auto& d = r.deviation;
      table +=
          fmt::format("\t{}\t{}\t{}\t{}\t{}\t{}", value(d.max_devi_v), value(d.min_devi_v),
                      value(d.avg_devi_v), value(d.max_devi_f), value(d.min_devi_f), value(d.avg_devi_f));
    }
    if (columns.errors)
      table += fmt::format("\t{}\t{}\t{}", value(r.err_e), value(r.err_f_rmse), value(r.err_f_max));
    table += "\n";
  }
  return table;
}

std::string rank_summary(const std::vector<UncertaintyRow>& rows, const UncertaintyColumns& columns) {
  if (!columns.errors) return {};
  const auto abs_e = column(rows, [](const UncertaintyRow& r) { return std::abs(r.err_e); });
  const auto f_rmse = column(rows, [](const UncertaintyRow& r) { return r.err_f_rmse; });
  const auto f_max = column(rows, [](const UncertaintyRow& r) { return r.err_f_max; });
  std::string out = fmt::format("{:<14}{:>11}{:>11}{:>11}{:>11}\n", "Spearman rho", "|err_e|", "err_f_rmse",
                                "err_f_max", "worst 10%");
  for (const auto& [name, get] : predictors(columns)) {
    const auto p = column(rows, get);
    out += fmt::format("{:<14}{}{}{}{}\n", name, cell(spearman(p, abs_e)), cell(spearman(p, f_rmse)),
                       cell(spearman(p, f_max)), cell(top_fraction_caught(p, f_rmse, 0.1)));
  }
  return out;
}

std::string uncertainty_svg(const std::vector<UncertaintyRow>& rows, const UncertaintyColumns& columns,
                            const std::string& sigma_units_note) {
  if (!columns.errors) return {};
  const auto abs_e = column(rows, [](const UncertaintyRow& r) { return std::abs(r.err_e); });
  const auto f_rmse = column(rows, [](const UncertaintyRow& r) { return r.err_f_rmse; });
  std::vector<PlotPanel> panels;
  if (columns.kalman) {
    PlotPanel e{"energy", "sigma_e (eV/atom" + sigma_units_note + ")", "|err_e| (eV/atom)", true, true, {},
                true};
    e.series.push_back(
        {"Kalman sigma_e", column(rows, [](const UncertaintyRow& r) { return r.sigma_e; }), abs_e, true, ""});
    panels.push_back(e);
  }
  PlotPanel f{"forces", "predicted (eV/A" + sigma_units_note + ")", "err_f_rmse (eV/A)", true, true, {},
              true};
  if (columns.kalman)
    f.series.push_back({"Kalman sigma_f_rms",
                        column(rows, [](const UncertaintyRow& r) { return r.sigma_f_rms; }), f_rmse, true,
                        ""});
  if (columns.ensemble)
    f.series.push_back({"ensemble avg_devi_f",
                        column(rows, [](const UncertaintyRow& r) { return r.deviation.avg_devi_f; }), f_rmse,
                        true, ""});
  panels.push_back(f);
  return render_svg(panels);
}

}  // namespace deepkf
