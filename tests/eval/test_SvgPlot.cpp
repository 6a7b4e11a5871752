#include <catch2/catch.hpp>

#include "src/eval/SvgPlot.hpp"

TEST_CASE("parity plots place points on the diagonal where prediction equals reference", "[train][plot]") {
  deepkf::PlotPanel panel;
  panel.title = "force <eV/A>";
  panel.diagonal = true;
  panel.series.push_back({"F", {-1.0, 0.0, 1.0}, {-1.0, 0.0, 1.0}, true, ""});
  const std::string svg = deepkf::render_svg({panel});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("force &lt;eV/A&gt;") != std::string::npos);  // text is escaped
  // Three markers, each with cx mapping equal to the mirrored cy (equal ranges, square axes not required):
  std::size_t count = 0;
  for (std::size_t pos = svg.find("<circle"); pos != std::string::npos; pos = svg.find("<circle", pos + 1))
    ++count;
  CHECK(count == 3);
}

TEST_CASE("learning curves on a log axis skip non-positive values and thin long series", "[train][plot]") {
  deepkf::PlotPanel panel;
  panel.log_y = true;
  std::vector<double> x, y;
  for (int i = 0; i < 1000; ++i) {
    x.push_back(i);
    y.push_back(i == 3 ? 0.0 : 1.0 / (1 + i));
  }
  panel.series.push_back({"rmse", x, y, true, ""});
  const std::string svg = deepkf::render_svg({panel, panel}, 400, 300, 100);
  std::size_t count = 0;
  for (std::size_t pos = svg.find("<circle"); pos != std::string::npos; pos = svg.find("<circle", pos + 1))
    ++count;
  CHECK(count == 2 * 100);  // stride 10 keeps 100 points per panel; index 3 is not a multiple of 10
  CHECK(svg.find("width='800'") != std::string::npos);
}
