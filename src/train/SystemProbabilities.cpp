#include "src/train/SystemProbabilities.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"

namespace deepkf {
namespace {

// Tolerance on sums of probabilities, for values written with a few digits (1/3 as 0.333...).
constexpr double kSumTolerance = 1e-8;

// p_s proportional to batches[s] over [begin, end), times `total`.
void share_by_batches(const std::vector<std::int64_t>& batches, std::int64_t begin, std::int64_t end,
                      double total, std::vector<double>& p) {
  double n = 0.0;
  for (auto s = begin; s < end; ++s) n += static_cast<double>(batches[static_cast<std::size_t>(s)]);
  for (auto s = begin; s < end; ++s)
    p[static_cast<std::size_t>(s)] = total * static_cast<double>(batches[static_cast<std::size_t>(s)]) / n;
}

std::int64_t parse_index(const std::string& text, bool& ok) {
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos) {
    ok = false;
    return 0;
  }
  return std::stoll(text);
}

}  // namespace

AutoProb parse_auto_prob(const std::string& text, const std::string& key, const std::string& file) {
  const std::string rule =
      "must be \"prob_uniform\", \"prob_sys_size\" or \"prob_sys_size;a:b:w;...\" (systems a to b - 1 share "
      "the weight w >= 0 by their batches)";
  AutoProb a;
  if (text == "prob_uniform") {
    a.uniform = true;
    return a;
  }
  const std::string head = "prob_sys_size";
  if (text.rfind(head, 0) != 0) reject_value(key, text, rule, file);
  std::string rest = text.substr(head.size());
  if (rest.empty()) return a;
  if (rest.front() != ';') reject_value(key, text, rule, file);
  bool positive = false;
  std::size_t pos = 1;
  while (pos <= rest.size()) {
    const std::size_t next = std::min(rest.find(';', pos), rest.size());
    const std::string item = rest.substr(pos, next - pos);
    pos = next + 1;
    const auto c1 = item.find(':');
    const auto c2 = c1 == std::string::npos ? std::string::npos : item.find(':', c1 + 1);
    if (c2 == std::string::npos) reject_value(key, text, rule, file);
    bool ok = true;
    AutoProb::Block b;
    b.begin = parse_index(item.substr(0, c1), ok);
    b.end = parse_index(item.substr(c1 + 1, c2 - c1 - 1), ok);
    const std::string w = item.substr(c2 + 1);
    std::size_t used = 0;
    try {
      b.weight = std::stod(w, &used);
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok || used != w.size() || !std::isfinite(b.weight) || b.weight < 0.0 || b.begin > b.end)
      reject_value(key, text, rule, file);
    positive |= b.weight > 0.0 && b.end > b.begin;
    a.blocks.push_back(b);
  }
  if (!positive) reject_value(key, text, "has no block of systems with a positive weight", file);
  return a;
}

std::vector<double> system_probabilities(const std::vector<double>& sys_probs, const std::string& auto_prob,
                                         const std::vector<std::int64_t>& batches, const std::string& path,
                                         const std::string& file) {
  const auto n = static_cast<std::int64_t>(batches.size());
  std::vector<double> p(batches.size(), 0.0);
  if (!sys_probs.empty()) {
    const std::string key = path + ".sys_probs";
    if (static_cast<std::int64_t>(sys_probs.size()) != n) {
      reject_value(key, sys_probs,
                   fmt::format("must have one entry per training system, and its paths hold {} systems", n),
                   file);
    }
    double given = 0.0;
    bool rest = false;
    for (double x : sys_probs) {
      if (!std::isfinite(x)) reject_value(key, sys_probs, "must be finite numbers", file);
      if (x >= 0.0) given += x;
      rest |= x < 0.0;
    }
    if (given > 1.0 + kSumTolerance) {
      reject_value(key, sys_probs, fmt::format("its probabilities sum to {:.6g}, more than 1", given), file);
    }
    if (!rest && std::abs(given - 1.0) > kSumTolerance) {
      reject_value(
          key, sys_probs,
          fmt::format("its probabilities sum to {:.6g}, not 1 (a negative entry takes what is left)", given),
          file);
    }
    // The negative entries share 1 - given by their batches.
    std::vector<std::int64_t> rest_batches(batches.size(), 0);
    double rest_total = 0.0;
    for (std::size_t s = 0; s < batches.size(); ++s) {
      if (sys_probs[s] >= 0.0) {
        p[s] = sys_probs[s];
      } else {
        rest_total += static_cast<double>(batches[s]);
        rest_batches[s] = batches[s];
      }
    }
    const double left = std::max(0.0, 1.0 - given);
    for (std::size_t s = 0; s < batches.size(); ++s) {
      if (sys_probs[s] < 0.0) p[s] = left * static_cast<double>(rest_batches[s]) / rest_total;
    }
  } else if (!auto_prob.empty()) {
    const std::string key = path + ".auto_prob";
    const AutoProb a = parse_auto_prob(auto_prob, key, file);
    if (a.uniform) {
      std::fill(p.begin(), p.end(), 1.0 / static_cast<double>(n));
    } else if (a.blocks.empty()) {
      return {};  // prob_sys_size: the unweighted order
    } else {
      double weights = 0.0;
      std::vector<bool> taken(batches.size(), false);
      for (const auto& b : a.blocks) {
        if (b.end > n) {
          reject_value(key, auto_prob,
                       fmt::format("names systems up to {}, but its paths hold {} systems (0 to {})",
                                   b.end - 1, n, n - 1),
                       file);
        }
        for (auto s = b.begin; s < b.end; ++s) {
          if (taken[static_cast<std::size_t>(s)])
            reject_value(key, auto_prob, fmt::format("puts system {} in two blocks", s), file);
          taken[static_cast<std::size_t>(s)] = true;
        }
        if (b.end > b.begin) weights += b.weight;
      }
      for (const auto& b : a.blocks) {
        if (b.end > b.begin) share_by_batches(batches, b.begin, b.end, b.weight / weights, p);
      }
    }
  } else {
    return {};
  }
  // Normalise away the rounding of the sums above.
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= sum;
  return p;
}

}  // namespace deepkf
