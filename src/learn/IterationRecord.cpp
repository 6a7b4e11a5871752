#include "src/learn/IterationRecord.hpp"

#include <algorithm>

#include "src/eval/SvgPlot.hpp"

namespace deepkf {
using json = nlohmann::json;

json iteration_record(int iteration, const json& train, const json& explore, const json& select,
                      const json& label) {
  json r{{"iteration", iteration}};
  if (!train.empty()) {
    r["steps"] = train.at("numb_steps");
    r["train_wall_s"] = train.at("wall_s");
    for (const char* part : {"train", "test"}) {
      const std::string key = std::string(part) + "_errors";
      if (!train.contains(key)) continue;
      const json& e = train.at(key);
      for (const char* q : {"rmse_e", "rmse_f", "rmse_v"})
        if (e.contains(q)) r[std::string(part) + "_" + q] = e.at(q);
      r[std::string(part) + "_frames"] = e.at("frames");
    }
  }
  if (!explore.empty()) {
    int failed = 0;
    for (const auto& run : explore.at("runs")) failed += run.at("ok").get<bool>() ? 0 : 1;
    r["explore_runs"] = explore.at("runs").size();
    r["explore_failed_runs"] = failed;
    r["explore_wall_s"] = explore.at("wall_s");
  }
  if (!select.empty()) {
    for (const char* k : {"score", "trust_lo", "trust_hi", "explored", "accurate", "candidate", "failed",
                          "candidate_fraction"})
      r[k] = select.at(k);
    r["selected"] = select.at("frames").size();
    const double explored = std::max(1.0, select.at("explored").get<double>());
    r["accurate_fraction"] = select.at("accurate").get<double>() / explored;
    r["failed_fraction"] = select.at("failed").get<double>() / explored;
  }
  if (!label.empty()) {
    for (const char* k : {"labelled", "label_failed", "label_wall_s", "label_cp2k_s"}) r[k] = label.at(k);
  }
  return r;
}

std::string records_svg(const std::vector<json>& records) {
  const auto series = [&](const std::string& label, const std::string& key) {
    PlotSeries s;
    s.label = label;
    for (const auto& r : records) {
      if (!r.contains(key) || !r.at(key).is_number()) continue;
      s.x.push_back(r.at("iteration").get<double>());
      s.y.push_back(r.at(key).get<double>());
    }
    return s;
  };
  PlotPanel fractions{"explored frames",
                      "iteration",
                      "fraction",
                      false,
                      false,
                      {series("accurate", "accurate_fraction"), series("candidate", "candidate_fraction"),
                       series("failed", "failed_fraction")}};
  PlotPanel force{
      "force RMSE", "iteration",
      "eV/A",       true,
      false,        {series("training data", "train_rmse_f"), series("test data", "test_rmse_f")}};
  PlotPanel energy{
      "energy RMSE", "iteration",
      "eV/atom",     true,
      false,         {series("training data", "train_rmse_e"), series("test data", "test_rmse_e")}};
  std::vector<PlotPanel> panels{fractions, force, energy};
  for (auto& p : panels) {
    for (auto& s : p.series) s.markers = s.x.size() < 2;
    p.series.erase(
        std::remove_if(p.series.begin(), p.series.end(), [](const PlotSeries& s) { return s.x.empty(); }),
        p.series.end());
  }
  return render_svg(panels, 360, 320);
}

}  // namespace deepkf
