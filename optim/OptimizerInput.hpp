#pragma once
// An optimizer's settings as an input file gives them. DeePMD-kit spreads them over several sections
// (training.kf_blocksize, loss.start_pref_f, learning_rate.start_lr, ...); deepkf also reads them from one
// "optimizer" section. Each optimizer reads each of its keys from the sections it may appear in (OptionKey);
// a key given in two of them is an error, so a file holds one value per setting.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/core/JsonKeys.hpp"

namespace deepkf {

// A key an optimizer reads and the sections (dotted paths: "optimizer", "training", "loss",
// "learning_rate", "optimizer.learning_rate") it may be in.
struct OptionKey {
  std::string key;
  std::vector<std::string> sections;
};

class OptimizerInput {
 public:
  // `doc`: the whole input document (kept by reference); `file`: its name, for messages.
  OptimizerInput(const nlohmann::json& doc, std::string file) : doc_(doc), file_(std::move(file)) {}

  // The section at a dotted path, or null when the file has none.
  const nlohmann::json& section(const std::string& path) const;
  // The dotted path of `key` in the one of `sections` that holds it, or "" when none does. ConfigError
  // when two of them do.
  std::string find(const std::string& key, const std::vector<std::string>& sections) const;

  // The value of `key` (from the section find() names), or `fallback` when absent. ConfigError for the
  // wrong type, or when `ok` rejects the value: "'loss.start_pref_f' in in.json is -1: must not be negative".
  template <typename T>
  T get(const OptionKey& key, const T& fallback, const std::function<bool(const T&)>& ok = {},
        const std::string& rule = "") const {
    asked_.push_back(key);
    const std::string path = find(key.key, key.sections);
    if (path.empty()) return fallback;
    const auto dot = path.rfind('.');
    const std::string where = dot == std::string::npos ? "" : path.substr(0, dot);
    const T value = get_or<T>(section(where), key.key, fallback, where, file_);
    if (ok && !ok(value)) reject_value(path, nlohmann::json(value), rule, file_);
    return value;
  }

  const std::string& file() const { return file_; }
  // Every key get() was asked for, in order: an optimizer's settings reader run on an empty document
  // lists its keys this way (keys_read_by), so each key is named in one place, where it is read.
  const std::vector<OptionKey>& asked() const { return asked_; }

 private:
  const nlohmann::json& doc_;
  std::string file_;
  mutable std::vector<OptionKey> asked_;
};

// The keys `read(const OptimizerInput&)` reads (an optimizer's settings reader), found by running it on an
// empty document.
template <typename Read>
std::vector<OptionKey> keys_read_by(Read read) {
  const nlohmann::json empty = nlohmann::json::object();
  const OptimizerInput recorder(empty, "");
  read(recorder);
  return recorder.asked();
}

// Rules for OptimizerInput::get.
inline bool is_positive(const double& v) { return v > 0.0; }
inline bool is_non_negative(const double& v) { return v >= 0.0; }

}  // namespace deepkf
