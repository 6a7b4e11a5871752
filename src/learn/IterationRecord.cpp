#include "src/learn/IterationRecord.hpp"

#include <algorithm>

#include "src/eval/SvgPlot.hpp"

namespace deepkf {
using json = nlohmann::json;

json iteration_record(int iteration, const std::optional<TrainRecord>& train,
                      const std::optional<ExploreRecord>& explore, const std::optional<SelectRecord>& select,
                      const std::optional<LabelRecord>& label) {
  json r{{"iteration", iteration}};
  if (train) {
    r["steps"] = train->numb_steps;
    r["train_wall_s"] = train->wall_s;
    const auto errors = [&](const std::string& part, const ErrorRecord& e) {
      r[part + "_rmse_e"] = e.rmse_e;
      r[part + "_rmse_f"] = e.rmse_f;
      if (e.rmse_v) r[part + "_rmse_v"] = *e.rmse_v;
      r[part + "_frames"] = e.frames;
    };
    errors("train", train->train_errors);
    if (train->test_errors) errors("test", *train->test_errors);
  }
  if (explore) {
    const auto failed = std::count_if(explore->runs.begin(), explore->runs.end(),
                                      [](const ExplorationRun& run) { return !run.ok; });
    r["explore_runs"] = explore->runs.size();
    r["explore_failed_runs"] = failed;
    r["explore_wall_s"] = explore->wall_s;
  }
  if (select) {
    r["score"] = select->score;
    r["trust_lo"] = select->trust_lo;
    r["trust_hi"] = select->trust_hi;
    r["explored"] = select->explored;
    r["accurate"] = select->accurate;
    r["candidate"] = select->candidate;
    r["failed"] = select->failed;
    r["candidate_fraction"] = select->candidate_fraction;
    r["selected"] = select->frames.size();
    const double explored = std::max(1.0, static_cast<double>(select->explored));
    r["accurate_fraction"] = static_cast<double>(select->accurate) / explored;
    r["failed_fraction"] = static_cast<double>(select->failed) / explored;
  }
  if (label) {
    r["labelled"] = label->labelled;
    r["label_failed"] = label->label_failed;
    r["label_wall_s"] = label->label_wall_s;
    r["label_cp2k_s"] = label->label_cp2k_s;
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
