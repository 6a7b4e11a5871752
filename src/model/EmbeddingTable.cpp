#include "src/model/EmbeddingTable.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in format.h before fmt 11)
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/Error.hpp"
#include "src/model/SwitchFunction.hpp"

namespace deepkf {

namespace {

// Intervals per table at most (4 Mi: 19 GB of float64 coefficients for M = 100; far beyond any useful step).
constexpr std::int64_t kMaxIntervals = std::int64_t{1} << 22;
// Points per interval at which the table is compared with its net: t = k h / 8, k = 1 .. 7.
constexpr int kErrorPoints = 7;

std::int64_t net_count(const ModelConfig& c) { return c.embedding_count(); }

std::string pair_name(const ModelConfig& c, int centre, int neighbour) {
  return c.type_map[static_cast<std::size_t>(centre)] + "-" + c.type_map[static_cast<std::size_t>(neighbour)];
}

void check_settings(const TableSettings& s) {
  const auto bad = [](const std::string& what, double v) {
    return ConfigError("compression: " + what + ", got " + fmt::format("{}", v));
  };
  if (!(s.step > 0.0) || !std::isfinite(s.step)) throw bad("--step must be a positive number", s.step);
  if (!(s.extrapolate >= 1.0) || !std::isfinite(s.extrapolate))
    throw bad("--extrapolate must be at least 1", s.extrapolate);
  if (!(s.coarse_factor >= 1.0) || !std::isfinite(s.coarse_factor))
    throw bad("the coarse step factor must be at least 1", s.coarse_factor);
  if (!(s.min_distance > 0.0) || !std::isfinite(s.min_distance))
    throw bad("--min-distance must be a positive distance (A)", s.min_distance);
}

// The closest distance the fine region covers for each (centre, neighbour) pair, and a sentence saying
// where it came from.
std::pair<std::vector<double>, std::string> covered_distances(const ModelConfig& c,
                                                              const TrainingRange& range,
                                                              const TableSettings& s) {
  const int nt = c.ntypes();
  std::vector<double> d(static_cast<std::size_t>(nt * nt));
  std::vector<std::string> unseen;
  for (int i = 0; i < nt; ++i) {
    for (int t = 0; t < nt; ++t) {
      auto& out = d[static_cast<std::size_t>(i * nt + t)];
      if (range.seen(i, t)) {
        out = s.min_distance_given ? std::min(range.min_distance(i, t), s.min_distance)
                                   : range.min_distance(i, t);
      } else {
        out = s.min_distance;
        if (!range.empty()) unseen.push_back(pair_name(c, i, t));
      }
    }
  }
  const std::string given =
      fmt::format("{} A ({})", s.min_distance, s.min_distance_given ? "--min-distance" : "default");
  std::string where;
  if (range.empty()) {
    where =
        "the model file records no training range (written before deepkf recorded it): the tables cover "
        "distances down to " +
        given + " for every pair";
  } else {
    where = fmt::format("the training data's closest neighbours ({} frames)", range.frames());
    if (s.min_distance_given)
      where += fmt::format(", extended down to {} A (--min-distance)", s.min_distance);
    if (!unseen.empty())
      where +=
          fmt::format("; pairs absent from the training data ({}) down to {}", fmt::join(unseen, " "), given);
  }
  return {d, where};
}

tabulated::Grid make_grid(double lo, double hi, double ext, const TableSettings& s, int net) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(ext)) {
    throw ModelError("compression: the statistics give a non-finite input range for embedding net " +
                     std::to_string(net) + " (dstd 0?)");
  }
  tabulated::Grid g;
  g.x0 = lo;
  g.step = s.step;
  g.nfine = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil((hi - lo) / s.step)));
  g.coarse_step = s.step * s.coarse_factor;
  g.ncoarse =
      std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil((ext - g.fine_end()) / g.coarse_step)));
  return g;
}

// The grid of one net: its input x over every (centre type, slot) that uses it, on the fine grid over the
// range the training data reached (s in [0, s(r_min)]) and on the coarse one up to extrapolate * s(r_min).
//  se_e2_a, se_e2_r, se_atten (strip, no attention layers): x = (s - davg) / dstd, increasing with s.
//  se_e3, se_e3_tebd: x = r^_j . r^_k with |r^_j| = s_j / dstd (columns 1..3), so |x| <= X = max over
//  centres (and for se_e3_tebd's one net over all type pairs) of s_max,a s_max,b / (dstd_a dstd_b): fine
//  over [-X, X], coarse up to extrapolate^2 X; below -X (both neighbours closer than the training data's
//  closest and opposite) the tangent line at -X.
tabulated::Grid plan_grid(const ModelConfig& c, const torch::Tensor& davg, const torch::Tensor& dstd,
                          const std::vector<double>& distances, const TableSettings& s, int net) {
  const int nt = c.ntypes();
  const auto mean = davg.to(torch::kCPU, torch::kFloat64).contiguous();
  const auto dev = dstd.to(torch::kCPU, torch::kFloat64).contiguous();
  const auto m = mean.accessor<double, 3>();
  const auto d = dev.accessor<double, 3>();
  // s(r_min) of (centre, t) and the largest 1 / dstd of column k over t's slots
  const auto s_max = [&](int centre, int t) {
    double ds = 0.0;
    return switched_inverse(distances[static_cast<std::size_t>(centre * nt + t)], c.rcut, c.rcut_smth, ds);
  };
  // The slots neighbours of type t fill: their own block, or every slot of a mixed list (se_atten).
  const auto first_slot = [&](int t) { return c.mixed_types() ? std::int64_t{0} : c.sel_offset(t); };
  const auto end_slot = [&](int t) {
    return c.mixed_types() ? c.nnei() : c.sel_offset(t) + c.sel[static_cast<std::size_t>(t)];
  };
  const auto inv_std = [&](int centre, int t, int col) {
    double out = 0.0;
    for (std::int64_t slot = first_slot(t); slot < end_slot(t); ++slot)
      out = std::max(out, 1.0 / d[centre][slot][col]);
    return out;
  };
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo, ext = -lo;
  if (c.three_body() || c.three_body_tebd()) {
    for (int centre = 0; centre < nt; ++centre) {
      for (int a = 0; a < nt; ++a) {
        for (int b = a; b < nt; ++b) {
          if (c.embedding_index(a, b) != net) continue;
          const double x =
              s_max(centre, a) * inv_std(centre, a, 1) * s_max(centre, b) * inv_std(centre, b, 1);
          lo = std::min(lo, -x);
          hi = std::max(hi, x);
          ext = std::max(ext, s.extrapolate * s.extrapolate * x);
        }
      }
    }
    return make_grid(lo, hi, ext, s, net);
  }
  for (int centre = 0; centre < nt; ++centre) {
    for (int t = 0; t < nt; ++t) {
      if (c.embedding_index(centre, t) != net) continue;
      const double top = s_max(centre, t);
      for (std::int64_t slot = first_slot(t); slot < end_slot(t); ++slot) {
        // x = (s - davg) / dstd increases with s
        const double m0 = m[centre][slot][0], d0 = d[centre][slot][0];
        lo = std::min(lo, (0.0 - m0) / d0);
        hi = std::max(hi, (top - m0) / d0);
        ext = std::max(ext, (s.extrapolate * top - m0) / d0);
      }
    }
  }
  return make_grid(lo, hi, ext, s, net);
}

// Quintic Hermite coefficients of every interval from the net's value, first and second derivative at the
// knots (f, f1, f2: (n + 1) x M) and the interval lengths h (n x 1): p(t) = sum_k c_k t^k with p, p', p''
// equal to the knot values at t = 0 and t = h. With A = f(1) - f - f1 h - f2 h^2 / 2, B = f1(1) - f1 - f2 h,
// C = f2(1) - f2:  c0 = f, c1 = f1, c2 = f2 / 2, c3 = (20 A - 8 B h + C h^2) / (2 h^3),
// c4 = (-30 A + 14 B h - 2 C h^2) / (2 h^4), c5 = (12 A - 6 B h + C h^2) / (2 h^5). Returns n x 6 x M.
torch::Tensor hermite_coefficients(const torch::Tensor& f, const torch::Tensor& f1, const torch::Tensor& f2,
                                   const torch::Tensor& h) {
  const auto n = h.size(0);
  const auto y0 = f.narrow(0, 0, n), y1 = f.narrow(0, 1, n);
  const auto d0 = f1.narrow(0, 0, n), d1 = f1.narrow(0, 1, n);
  const auto s0 = f2.narrow(0, 0, n), s1 = f2.narrow(0, 1, n);
  const auto A = y1 - y0 - d0 * h - 0.5 * s0 * h * h;
  const auto B = d1 - d0 - s0 * h;
  const auto C = s1 - s0;
  const auto h2 = h * h, h3 = h2 * h;
  const auto c3 = (20.0 * A - 8.0 * B * h + C * h2) / (2.0 * h3);
  const auto c4 = (-30.0 * A + 14.0 * B * h - 2.0 * C * h2) / (2.0 * h3 * h);
  const auto c5 = (12.0 * A - 6.0 * B * h + C * h2) / (2.0 * h3 * h2);
  return torch::stack({y0, d0, 0.5 * s0, c3, c4, c5}, 1);
}

// The table (coefficients in their stored dtype) against the net at kErrorPoints points inside every
// interval: max |value| and |slope| differences, fine and coarse regions apart.
TableError measure_error(DenseNet net, const tabulated::Grid& g, const torch::Tensor& coef) {
  const auto n = g.intervals();
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  std::vector<double> left(static_cast<std::size_t>(n)), width(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    left[static_cast<std::size_t>(i)] = g.knot(i);
    width[static_cast<std::size_t>(i)] = g.knot(i + 1) - g.knot(i);
  }
  const auto tau = torch::arange(1, kErrorPoints + 1, opts) / (kErrorPoints + 1.0);  // P
  const auto t = torch::tensor(width, opts).unsqueeze(1) * tau.unsqueeze(0);         // n x P
  const auto x = torch::tensor(left, opts).unsqueeze(1) + t;                         // n x P
  const auto exact = net->forward_derivatives(x.reshape({-1, 1}));
  const auto& y = exact[0];
  const auto& dy = exact[1];
  const auto c = coef.to(torch::kFloat64);  // n x 6 x M
  auto value = torch::zeros_like(y).view({n, kErrorPoints, -1});
  auto slope = torch::zeros_like(value);
  const auto tt = t.unsqueeze(2);  // n x P x 1
  for (int k = 5; k >= 0; --k) {
    // Horner: value = value t + c_k, slope = slope t + k c_k
    value = value * tt + c.select(1, k).unsqueeze(1);
    if (k > 0) slope = slope * tt + k * c.select(1, k).unsqueeze(1);
  }
  const auto dv = (value - y.view_as(value)).abs().amax({1, 2});
  const auto ds = (slope - dy.view_as(slope)).abs().amax({1, 2});
  TableError e;
  const auto fine = std::min<std::int64_t>(g.nfine, n);
  e.value_fine = dv.narrow(0, 0, fine).max().item<double>();
  e.slope_fine = ds.narrow(0, 0, fine).max().item<double>();
  if (n > fine) {
    e.value_coarse = dv.narrow(0, fine, n - fine).max().item<double>();
    e.slope_coarse = ds.narrow(0, fine, n - fine).max().item<double>();
  }
  return e;
}

double number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()))
    throw ModelError(where + ": compression entry '" + key + "' is missing or not a number");
  return j[key].get<double>();
}

std::int64_t interval_count(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() || j[key].get<std::int64_t>() < 0 ||
      j[key].get<std::int64_t>() > kMaxIntervals)
    throw ModelError(where + ": compression entry '" + key + "' is missing or not a count of intervals");
  return j[key].get<std::int64_t>();
}

}  // namespace

EmbeddingTableImpl::EmbeddingTableImpl(const std::vector<DenseNet>& nets,
                                       const std::vector<std::string>& names, const ModelConfig& config,
                                       const torch::Tensor& davg, const torch::Tensor& dstd,
                                       const TrainingRange& range, const TableSettings& settings) {
  torch::NoGradGuard guard;
  check_settings(settings);
  if (static_cast<std::int64_t>(nets.size()) != net_count(config) || names.size() != nets.size())
    throw ModelError("compression: " + std::to_string(nets.size()) + " embedding nets for " +
                     std::to_string(net_count(config)) + " tables");
  const auto [distances, source] = covered_distances(config, range, settings);
  std::int64_t total = 0;
  for (std::size_t k = 0; k < nets.size(); ++k) {
    grids_.push_back(plan_grid(config, davg, dstd, distances, settings, static_cast<int>(k)));
    total += grids_.back().intervals();
  }
  const auto bytes = static_cast<double>(total) * 6 * static_cast<double>(config.embedding_width()) *
                     (config.precision == torch::kFloat32 ? 4 : 8);
  if (total > kMaxIntervals) {
    throw ConfigError(
        fmt::format("compression: --step {} makes {} intervals ({:.1f} GB of tables); choose a "
                    "larger --step",
                    settings.step, total, bytes / 1e9));
  }
  layout_ = {{"step", settings.step},
             {"coarse_step", settings.step * settings.coarse_factor},
             {"extrapolate", settings.extrapolate},
             {"range", source},
             {"tables", nlohmann::json::array()}};
  nlohmann::json rows = nlohmann::json::array();
  for (int c = 0; c < config.ntypes(); ++c)
    rows.push_back(std::vector<double>(distances.begin() + c * config.ntypes(),
                                       distances.begin() + (c + 1) * config.ntypes()));
  layout_["min_distance"] = rows;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  for (std::size_t k = 0; k < nets.size(); ++k) {
    const auto& g = grids_[k];
    std::vector<double> knots(static_cast<std::size_t>(g.intervals() + 1));
    for (std::int64_t i = 0; i <= g.intervals(); ++i) knots[static_cast<std::size_t>(i)] = g.knot(i);
    const auto x = torch::tensor(knots, opts);
    // G, G', G'' of the net at the knots (exact, float64)
    const auto [f, f1, f2] = DenseNet(nets[k])->forward_derivatives(x.unsqueeze(1));
    const auto h = (x.narrow(0, 1, g.intervals()) - x.narrow(0, 0, g.intervals())).unsqueeze(1);
    const auto coef = hermite_coefficients(f, f1, f2, h).to(config.precision).contiguous();
    coef_.push_back(register_buffer("coef_" + std::to_string(k), coef));
    errors_.push_back(measure_error(nets[k], g, coef));
    const auto& e = errors_.back();
    layout_["tables"].push_back({{"net", names[k]},
                                 {"x0", g.x0},
                                 {"step", g.step},
                                 {"fine_intervals", g.nfine},
                                 {"coarse_step", g.coarse_step},
                                 {"coarse_intervals", g.ncoarse},
                                 {"error",
                                  {{"value_fine", e.value_fine},
                                   {"slope_fine", e.slope_fine},
                                   {"value_coarse", e.value_coarse},
                                   {"slope_coarse", e.slope_coarse}}}});
  }
}

EmbeddingTableImpl::EmbeddingTableImpl(const nlohmann::json& layout, const ModelConfig& config,
                                       const std::string& where)
    : layout_(layout) {
  if (!layout.is_object() || !layout.contains("tables") || !layout["tables"].is_array() ||
      static_cast<std::int64_t>(layout["tables"].size()) != net_count(config)) {
    throw ModelError(where + ": its compression entry must list " + std::to_string(net_count(config)) +
                     " tables, one per embedding net");
  }
  for (const auto& t : layout["tables"]) {
    tabulated::Grid g;
    g.x0 = number(t, "x0", where);
    g.step = number(t, "step", where);
    g.nfine = interval_count(t, "fine_intervals", where);
    g.coarse_step = number(t, "coarse_step", where);
    g.ncoarse = interval_count(t, "coarse_intervals", where);
    if (!(g.step > 0.0) || !(g.coarse_step > 0.0) || g.nfine < 1)
      throw ModelError(where + ": a compression table has a step <= 0 or no fine interval");
    grids_.push_back(g);
    TableError e;
    if (const auto it = t.find("error"); it != t.end() && it->is_object()) {
      e.value_fine = it->value("value_fine", 0.0);
      e.slope_fine = it->value("slope_fine", 0.0);
      e.value_coarse = it->value("value_coarse", 0.0);
      e.slope_coarse = it->value("slope_coarse", 0.0);
    }
    errors_.push_back(e);
  }
  allocate(config);
}

void EmbeddingTableImpl::allocate(const ModelConfig& config) {
  for (std::size_t k = 0; k < grids_.size(); ++k) {
    coef_.push_back(register_buffer("coef_" + std::to_string(k),
                                    torch::zeros({grids_[k].intervals(), 6, config.embedding_width()},
                                                 torch::TensorOptions().dtype(config.precision))));
  }
}

std::int64_t EmbeddingTableImpl::bytes() const {
  std::int64_t n = 0;
  for (const auto& c : coef_) n += c.numel() * static_cast<std::int64_t>(c.element_size());
  return n;
}

}  // namespace deepkf
