// The curves of online-learning runs side by side: held-out errors against the CP2K frames labelled so far,
// from each run's iterations.jsonl.
//   bench_learn_curves OUT.svg NAME=run/iterations.jsonl [NAME=...]
// Prints a markdown table (one row per run and iteration) and writes the chart.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/eval/SvgPlot.hpp"

using json = nlohmann::json;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.svg NAME=iterations.jsonl [NAME=...]\n", argv[0]);
    return 2;
  }
  // Log scales: a diverged training is orders of magnitude above the others.
  deepkf::PlotPanel force{"held-out force RMSE", "CP2K frames labelled", "eV/A", true, false, {}};
  deepkf::PlotPanel energy{"held-out energy RMSE", "CP2K frames labelled", "eV/atom", true, false, {}};
  deepkf::PlotPanel candidates{
      "candidate fraction (scored runs)", "CP2K frames labelled", "fraction", false, false, {}};
  std::printf(
      "| run | iteration | frames labelled | CP2K s (summed) | test rmse_f (eV/A) | test rmse_e (meV/atom) | "
      "train rmse_f (eV/A) | candidate fraction | training s "
      "|\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq), path = arg.substr(eq + 1);
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 1;
    }
    deepkf::PlotSeries f{name, {}, {}, false, ""}, e{name, {}, {}, false, ""}, c{name, {}, {}, false, ""};
    double labelled = 0, cp2k_s = 0;
    for (std::string line; std::getline(in, line);) {
      const json r = json::parse(line);
      // The model of iteration i was trained on the frames labelled before it.
      const double rmse_f = r.value("test_rmse_f", NAN), rmse_e = r.value("test_rmse_e", NAN);
      f.x.push_back(labelled), f.y.push_back(rmse_f);
      e.x.push_back(labelled), e.y.push_back(rmse_e);
      // A run with a score (not frames drawn at random) has a meaningful candidate fraction.
      const std::string score = r.value("score", std::string());
      const bool scored = !score.empty() && score.rfind("none", 0) != 0;
      if (scored) c.x.push_back(labelled), c.y.push_back(r.value("candidate_fraction", NAN));
      std::printf("| %s | %d | %.0f | %.0f | %.4f | %.2f | %.4f | %s | %.0f |\n", name.c_str(),
                  r.at("iteration").get<int>(), labelled, cp2k_s, rmse_f, 1000 * rmse_e,
                  r.value("train_rmse_f", NAN),
                  scored ? fmt::format("{:.3f}", r.value("candidate_fraction", NAN)).c_str() : "-",
                  r.value("train_wall_s", NAN));
      labelled += r.value("labelled", 0);
      cp2k_s += r.value("label_cp2k_s", 0.0);
    }
    force.series.push_back(f);
    energy.series.push_back(e);
    if (!c.x.empty()) candidates.series.push_back(c);
  }
  std::vector<deepkf::PlotPanel> panels{force, energy};
  if (!candidates.series.empty()) panels.push_back(candidates);
  std::ofstream(argv[1]) << deepkf::render_svg(panels, 380, 320);
  return 0;
}
