#include "src/eval/SvgPlot.hpp"
#include "tests/support/Catch.hpp"

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

TEST_CASE("log-log panels place decades evenly and keep y = x on the diagonal", "[eval][plot]") {
  deepkf::PlotPanel panel;
  panel.log_x = panel.log_y = panel.diagonal = true;
  // 1e-2 is a decade from each of the others; the point with x = 0 cannot be shown on a log axis.
  panel.series.push_back({"sigma", {1e-3, 1e-2, 1e-1, 0.0}, {1e-3, 1e-2, 1e-1, 1.0}, true, ""});
  const std::string svg = deepkf::render_svg({panel}, 440, 400);
  std::vector<double> cx, cy;
  for (std::size_t pos = svg.find("<circle"); pos != std::string::npos; pos = svg.find("<circle", pos + 1)) {
    cx.push_back(std::stod(svg.substr(svg.find("cx='", pos) + 4)));
    cy.push_back(std::stod(svg.substr(svg.find("cy='", pos) + 4)));
  }
  REQUIRE(cx.size() == 3);
  CHECK(cx[1] == Approx(0.5 * (cx[0] + cx[2])).epsilon(1e-4));
  CHECK(cy[1] == Approx(0.5 * (cy[0] + cy[2])).epsilon(1e-4));
  // The plot area is x 70 .. 425, y 35 .. 350 for a 440 x 400 panel; equal ranges put y = x points on its
  // diagonal: (cx - 70) / 355 == (350 - cy) / 315.
  for (std::size_t i = 0; i < 3; ++i)
    CHECK((cx[i] - 70.0) / 355.0 == Approx((350.0 - cy[i]) / 315.0).epsilon(1e-3));
}

TEST_CASE("tick labels tell neighbouring ticks apart on a narrow range far from zero", "[eval][plot]") {
  // Energies per atom around -107 eV within 0.2 eV: ticks 0.05 apart, which four significant digits would
  // print as -107, -107, -106.9, -106.9.
  deepkf::PlotPanel panel;
  panel.diagonal = true;
  panel.series.push_back({"E", {-107.05, -106.98, -106.9}, {-107.04, -106.97, -106.88}, true, ""});
  const std::string svg = deepkf::render_svg({panel});
  std::vector<std::string> labels;
  for (std::size_t pos = svg.find("text-anchor='end' font-size='10'>"); pos != std::string::npos;
       pos = svg.find("text-anchor='end' font-size='10'>", pos + 1)) {
    const auto begin = svg.find('>', pos) + 1;
    labels.push_back(svg.substr(begin, svg.find('<', begin) - begin));
  }
  REQUIRE(labels.size() >= 3);
  for (std::size_t i = 1; i < labels.size(); ++i) {
    INFO("y tick labels: " << labels[i - 1] << ", " << labels[i]);
    CHECK(labels[i] != labels[i - 1]);
  }
  CHECK(labels.front().find('.') != std::string::npos);  // -107.05, not -107
}
