#pragma once
// Small self-contained SVG charts: parity plots (prediction against reference) and learning curves.
// SVG needs no library and opens in any browser.
#include <string>
#include <vector>

namespace deepkf {

struct PlotSeries {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
  bool markers = false;  // points instead of a polyline
  std::string color;     // CSS colour; empty picks from a palette
};

struct PlotPanel {
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool log_y = false;
  bool diagonal = false;  // draw y = x (parity plots) and use equal x and y ranges (log_x == log_y)
  std::vector<PlotSeries> series;
  bool log_x = false;  // after `series`, so that existing brace initialisers keep their meaning
};

// Panels side by side. Series with more than max_points points are thinned with a fixed stride.
std::string render_svg(const std::vector<PlotPanel>& panels, int panel_width = 440, int panel_height = 400,
                       std::size_t max_points = 20000);

}  // namespace deepkf
