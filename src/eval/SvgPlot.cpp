#include "src/eval/SvgPlot.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace deepkf {
namespace {

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void finish() {
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-300) {
      lo -= 0.5;
      hi += 0.5;
    }
    const double pad = 0.04 * (hi - lo);
    lo -= pad;
    hi += pad;
  }
};

// About five round tick values covering [lo, hi], with their labels: as many decimals as the step needs,
// so that ticks of -106.95 and -106.90 do not both read -107 as four significant digits would make them.
struct Tick {
  double value;
  std::string label;
};
std::vector<Tick> ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = mag * (r < 1.5 ? 1 : (r < 3 ? 2 : (r < 7 ? 5 : 10)));
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  const bool fixed = decimals <= 6 && std::max(std::abs(lo), std::abs(hi)) < 1e7;
  std::vector<Tick> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step) {
    const double v = std::abs(t) < 1e-12 * step ? 0 : t;
    std::ostringstream label;
    if (fixed)
      label << std::fixed << std::setprecision(decimals) << v;
    else
      label << number(v);
    out.push_back({v, label.str()});
  }
  return out;
}

void render_panel(std::ostringstream& svg, const PlotPanel& panel, double x0, double w, double h,
                  std::size_t max_points) {
  const double left = x0 + 70, right = x0 + w - 15, top = 35, bottom = h - 50;
  // Axis positions are linear in tx(x) and ty(y): log10 on a log axis, where values <= 0 are left out.
  auto tx = [&](double v) { return panel.log_x ? std::log10(std::max(v, 1e-300)) : v; };
  auto ty = [&](double v) { return panel.log_y ? std::log10(std::max(v, 1e-300)) : v; };
  auto shown = [&](double x, double y) { return (!panel.log_x || x > 0) && (!panel.log_y || y > 0); };
  Range rx, ry;
  for (const auto& s : panel.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!shown(s.x[i], s.y[i])) continue;
      rx.add(tx(s.x[i]));
      ry.add(ty(s.y[i]));
    }
  }
  if (panel.diagonal) {
    rx.lo = ry.lo = std::min(rx.lo, ry.lo);
    rx.hi = ry.hi = std::max(rx.hi, ry.hi);
  }
  rx.finish();
  ry.finish();
  // Positions of transformed values, and of data values.
  auto pxt = [&](double t) { return left + (t - rx.lo) / (rx.hi - rx.lo) * (right - left); };
  auto pyt = [&](double t) { return bottom - (t - ry.lo) / (ry.hi - ry.lo) * (bottom - top); };
  auto px = [&](double v) { return pxt(tx(v)); };
  auto py = [&](double v) { return pyt(ty(v)); };

  svg << "<rect x='" << left << "' y='" << top << "' width='" << right - left << "' height='" << bottom - top
      << "' fill='white' stroke='#333'/>\n";
  svg << "<text x='" << (left + right) / 2 << "' y='20' text-anchor='middle' font-size='14'>"
      << escape(panel.title) << "</text>\n";
  svg << "<text x='" << (left + right) / 2 << "' y='" << h - 12 << "' text-anchor='middle' font-size='12'>"
      << escape(panel.xlabel) << "</text>\n";
  svg << "<text transform='translate(" << x0 + 16 << "," << (top + bottom) / 2
      << ") rotate(-90)' text-anchor='middle' font-size='12'>" << escape(panel.ylabel) << "</text>\n";
  for (const auto& [t, label] : ticks(rx.lo, rx.hi)) {
    svg << "<line x1='" << pxt(t) << "' y1='" << bottom << "' x2='" << pxt(t) << "' y2='" << bottom + 4
        << "' stroke='#333'/><text x='" << pxt(t) << "' y='" << bottom + 17
        << "' text-anchor='middle' font-size='10'>" << (panel.log_x ? "1e" + number(t) : label)
        << "</text>\n";
  }
  for (const auto& [t, label] : ticks(ry.lo, ry.hi)) {
    const double y = pyt(t);
    svg << "<line x1='" << left - 4 << "' y1='" << y << "' x2='" << left << "' y2='" << y
        << "' stroke='#333'/><text x='" << left - 6 << "' y='" << y + 3
        << "' text-anchor='end' font-size='10'>" << (panel.log_y ? "1e" + number(t) : label) << "</text>\n";
  }
  if (panel.diagonal) {
    svg << "<line x1='" << pxt(rx.lo) << "' y1='" << pyt(rx.lo) << "' x2='" << pxt(rx.hi) << "' y2='"
        << pyt(rx.hi) << "' stroke='#888' stroke-dasharray='4 3'/>\n";
  }
  std::size_t index = 0;
  for (const auto& s : panel.series) {
    const std::string color = s.color.empty() ? kPalette[index % 6] : s.color;
    const std::size_t n = std::min(s.x.size(), s.y.size());
    const std::size_t stride = std::max<std::size_t>(1, (n + max_points - 1) / max_points);
    if (s.markers) {
      svg << "<g fill='" << color << "' fill-opacity='0.5'>\n";
      for (std::size_t i = 0; i < n; i += stride) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || !shown(s.x[i], s.y[i])) continue;
        svg << "<circle cx='" << px(s.x[i]) << "' cy='" << py(s.y[i]) << "' r='1.8'/>\n";
      }
      svg << "</g>\n";
    } else {
      svg << "<polyline fill='none' stroke='" << color << "' stroke-width='1.6' points='";
      for (std::size_t i = 0; i < n; i += stride) {
        if (!shown(s.x[i], s.y[i])) continue;
        svg << px(s.x[i]) << "," << py(s.y[i]) << " ";
      }
      svg << "'/>\n";
    }
    if (!s.label.empty()) {
      const double ly = top + 16 + 16 * static_cast<double>(index);
      svg << "<rect x='" << left + 8 << "' y='" << ly - 9 << "' width='12' height='10' fill='" << color
          << "'/><text x='" << left + 25 << "' y='" << ly << "' font-size='11'>" << escape(s.label)
          << "</text>\n";
    }
    ++index;
  }
}

}  // namespace

std::string render_svg(const std::vector<PlotPanel>& panels, int panel_width, int panel_height,
                       std::size_t max_points) {
  std::ostringstream svg;
  svg.precision(5);
  const auto n = static_cast<double>(std::max<std::size_t>(1, panels.size()));
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << panel_width * n << "' height='" << panel_height
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='#fafafa'/>\n";
  for (std::size_t p = 0; p < panels.size(); ++p) {
    render_panel(svg, panels[p], panel_width * static_cast<double>(p), panel_width, panel_height, max_points);
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace deepkf
