// DataSection: DeePMD-kit's training_data and validation_data sections read with their keys and aliases.
#include "src/train/DataSectionRead.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"
#include "src/train/SystemProbabilities.hpp"
#include "src/train/UnsupportedBatchRule.hpp"

namespace deepkf {

using json = nlohmann::json;

namespace {

const std::vector<std::string> kIgnoredData = {"set_prefix"};
// Validation data is evaluated frame by frame, not drawn: DeePMD-kit's drawing keys have no effect there.
const std::vector<std::string> kIgnoredValidation = {"auto_prob", "auto_prob_style", "sys_probs",
                                                     "sys_weights"};
// DeePMD-kit's names of one key (its argcheck aliases).
const std::vector<std::string> kAutoProbNames = {"auto_prob", "auto_prob_style"};
const std::vector<std::string> kSysProbsNames = {"sys_probs", "sys_weights"};
const std::vector<std::string> kNumbBtchNames = {"numb_btch", "numb_batch"};

// batch_size in DeePMD-kit's forms (DataSection).
void read_batch_size(const json& b, const std::string& key, const std::string& file, DataSection& d) {
  const std::string rule =
      "must be a positive integer, \"auto\", \"auto:N\", \"max:N\" or a list of one "
      "positive integer per system path (" +
      std::to_string(d.systems.size()) + ")";
  const auto positive = [&](const json& v) {
    require(v.is_number(), file, key, b, rule);
    const int n = json_value<int>(v, key, file);
    require(n >= 1, file, key, b, rule);
    return n;
  };
  using Rule = DataSection::BatchRule;
  if (b.is_array()) {
    require(b.size() == d.systems.size(), file, key, b, rule);
    for (const auto& v : b) d.batch_sizes.push_back(positive(v));
    d.batch_rule = Rule::kPerPath;
  } else if (b.is_string()) {
    const std::string text = b.get<std::string>();
    const auto colon = text.find(':');
    const std::string form = text.substr(0, colon);
    if (form == "mixed" || form == "filter") reject_value(key, b, unsupported_batch_rule(form), file);
    require(form == "auto" || (form == "max" && colon != std::string::npos), file, key, b, rule);
    d.batch_rule = form == "auto" ? Rule::kAtLeast : Rule::kAtMost;
    if (colon != std::string::npos) {
      const std::string n = text.substr(colon + 1);
      require(!n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 9, file, key,
              b, rule);
      d.batch_atoms = std::stoi(n);
      require(d.batch_atoms >= 1, file, key, b, rule);
    }
  } else {
    d.batch_size = positive(b);
  }
}

}  // namespace

json batch_size_json(const DataSection& d) {
  using Rule = DataSection::BatchRule;
  switch (d.batch_rule) {
    case Rule::kAtLeast:
      return d.batch_atoms == 32 ? json("auto") : json("auto:" + std::to_string(d.batch_atoms));
    case Rule::kAtMost:
      return json("max:" + std::to_string(d.batch_atoms));
    case Rule::kPerPath:
      return json(d.batch_sizes);
    case Rule::kFixed:
      break;
  }
  return json(d.batch_size);
}

int DataSection::batch_for(std::int64_t natoms, std::size_t path) const {
  const std::int64_t n = std::max<std::int64_t>(natoms, 1);
  switch (batch_rule) {
    case BatchRule::kAtLeast:
      return static_cast<int>(std::max<std::int64_t>(1, (batch_atoms + n - 1) / n));
    case BatchRule::kAtMost:
      return static_cast<int>(std::max<std::int64_t>(1, batch_atoms / n));
    case BatchRule::kPerPath:
      return batch_sizes.at(path);
    case BatchRule::kFixed:
      break;
  }
  return batch_size;
}

DataSection read_data_section(const json& s, const std::string& path, const std::string& file,
                              bool validation, std::vector<std::string>& ignored) {
  std::vector<std::string> known = {"systems", "batch_size"};
  if (validation) known = joined(known, kNumbBtchNames);
  if (!validation) known = joined(joined(joined(known, {"repeat"}), kSysProbsNames), kAutoProbNames);
  const auto ignore = validation ? joined(kIgnoredData, kIgnoredValidation) : kIgnoredData;
  check_keys(s, path, joined(known, ignore), file);
  // Under either name; both are an error, for validation data too (where the key has no effect).
  const std::string sys_probs = one_of(s, kSysProbsNames, path, file);
  note_ignored(s, path, ignore, ignored);
  DataSection d;
  const json systems = s.contains("systems") ? s.at("systems") : json();
  if (systems.is_string()) {
    d.systems.push_back(systems.get<std::string>());
  } else if (systems.is_array() && !systems.empty()) {
    for (const auto& item : systems) {
      require(item.is_string(), file, path + ".systems", systems, "must be a list of paths");
      d.systems.push_back(item.get<std::string>());
    }
  } else {
    throw ConfigError("'" + path + ".systems' in " + file +
                      " must be a path or a non-empty list of paths, found " + systems.dump());
  }
  if (s.contains("batch_size")) read_batch_size(s.at("batch_size"), path + ".batch_size", file, d);
  if (s.contains("repeat")) {
    // One count for every path, or one per path.
    const json& r = s.at("repeat");
    const std::string rule = "must be a positive integer or a list of one per system path (" +
                             std::to_string(d.systems.size()) + ")";
    const json items = r.is_array() ? r : json::array({r});
    require(!items.empty() && (!r.is_array() || items.size() == d.systems.size()), file, path + ".repeat", r,
            rule);
    for (const auto& item : items) {
      require(item.is_number(), file, path + ".repeat", r, rule);
      const int n = json_value<int>(item, path + ".repeat", file);
      require(n >= 1, file, path + ".repeat", r, rule);
      d.repeat.push_back(n);
    }
    if (!r.is_array()) d.repeat.assign(d.systems.size(), d.repeat.front());
  }
  if (!validation && !sys_probs.empty() && !s.at(sys_probs).is_null()) {
    const json& p = s.at(sys_probs);
    const std::string key = path + "." + sys_probs;
    const std::string rule =
        "must be a list of numbers, one per training system (a negative one: a share of "
        "what the others leave)";
    require(p.is_array() && !p.empty(), file, key, p, rule);
    for (const auto& x : p) {
      require(x.is_number() && std::isfinite(x.get<double>()), file, key, p, rule);
      d.sys_probs.push_back(x.get<double>());
    }
  }
  if (const std::string name = validation ? "" : one_of(s, kAutoProbNames, path, file); !name.empty()) {
    const json& a = s.at(name);
    if (!a.is_null()) {
      require(a.is_string(), file, path + "." + name, a, "must be a text such as \"prob_sys_size\"");
      d.auto_prob = a.get<std::string>();
      (void)parse_auto_prob(d.auto_prob, path + "." + name, file);  // its form now; its ranges with the data
    }
  }
  if (const std::string name = validation ? one_of(s, kNumbBtchNames, path, file) : ""; !name.empty()) {
    d.numb_btch = get_or<int>(s, name, 1, path, file);
    require(d.numb_btch >= 1, file, path + "." + name, json(d.numb_btch), "must be at least 1");
  }
  return d;
}

}  // namespace deepkf
