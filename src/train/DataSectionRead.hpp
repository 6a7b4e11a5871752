#pragma once
// Reading DeePMD-kit's data sections (training.training_data, training.validation_data) into DataSection,
// and writing batch_size back as the input gave it.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/train/TrainConfig.hpp"

namespace deepkf {

// The section `s` at dotted `path` of `file`: systems, batch_size in DeePMD-kit's forms, repeat, sys_probs
// and auto_prob (training) or numb_btch (validation). Keys accepted without effect are appended to
// `ignored`; a bad value is a ConfigError naming the key, the file and the value.
DataSection read_data_section(const nlohmann::json& s, const std::string& path, const std::string& file,
                              bool validation, std::vector<std::string>& ignored);

// batch_size as the input gave it (for input.resolved.json).
nlohmann::json batch_size_json(const DataSection& d);

}  // namespace deepkf
