#include "src/train/TrainConfig.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "optim/Optimizers.hpp"
#include "src/core/Error.hpp"
#include "src/core/JsonFile.hpp"
#include "src/core/JsonKeys.hpp"
#include "src/model/ModelConfig.hpp"
#include "src/train/DataSectionRead.hpp"
#include "src/train/SystemProbabilities.hpp"

namespace deepkf {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// DeePMD-kit keys that are valid in its input files but have no effect in deepkf.
const std::vector<std::string> kIgnoredTraining = {
    "disp_training", "time_training",       "profiling",         "profiling_file",
    "tensorboard",   "tensorboard_log_dir", "tensorboard_freq",  "numb_test",
    "max_ckpt_keep", "enable_profiler",     "gradient_max_norm", "warmup_steps",
    "stat_file",     "mixed_precision",     "disp_avg",          "ema_ckpt_keep"};
// Top-level sections of DeePMD-kit's input with no effect in deepkf ("validating": its full-validation and
// best-checkpoint settings; deepkf validates at every display step).
const std::vector<std::string> kIgnoredTop = {"validating"};
const std::vector<std::string> kIgnoredLoss = {"start_pref_ae", "limit_pref_ae", "start_pref_pf",
                                               "limit_pref_pf", "relative_f",    "enable_atom_ener_coeff"};

// The optimizer: named by the "optimizer" section or by DeePMD-kit's training.opt_type; its settings are
// read by its own parser (optim/Optimizers.hpp), from whichever sections it allows.
void read_optimizer(const json& doc, const json& t, TrainConfig& c) {
  const std::string& file = c.file;
  if (doc.contains("loss")) {
    const json& l = doc.at("loss");
    // The type first: another loss has keys of its own, which are not the mistake.
    const std::string type = get_or<std::string>(l, "type", "ener", "loss", file);
    require(type == "ener", file, "loss.type", json(type),
            "only \"ener\" is supported (energies, forces and virials)");
    check_keys(l, "loss", joined(joined({"type"}, optimizer_keys("loss")), kIgnoredLoss), file);
    note_ignored(l, "loss", kIgnoredLoss, c.ignored_keys);
  }
  if (doc.contains("learning_rate"))
    check_keys(doc.at("learning_rate"), "learning_rate", optimizer_keys("learning_rate"), file);
  if (t.contains("opt_type")) {
    c.optimizer =
        optimizer_name(get_required<std::string>(t, "opt_type", "training", file), "training.opt_type", file);
  }
  if (doc.contains("optimizer")) {
    const json& o = doc.at("optimizer");
    check_keys(o, "optimizer", joined({"type", "learning_rate"}, optimizer_keys("optimizer")), file);
    if (o.contains("learning_rate")) {
      check_keys(o.at("learning_rate"), "optimizer.learning_rate", optimizer_keys("optimizer.learning_rate"),
                 file);
    }
    if (o.contains("type")) {
      const std::string name =
          optimizer_name(get_required<std::string>(o, "type", "optimizer", file), "optimizer.type", file);
      if (t.contains("opt_type") && name != c.optimizer) {
        throw ConfigError("'optimizer.type' (" + name + ") and 'training.opt_type' (" + c.optimizer +
                          ") in " + file + " name different optimizers: keep one");
      }
      c.optimizer = name;
    }
  }
  c.optimizer_settings = resolve_optimizer_settings(c.optimizer, OptimizerInput(doc, file), c.unused_keys);
}

// The run's length under any of DeePMD-kit's names for it, one of them.
void read_run_length(const json& t, TrainConfig& c) {
  const std::string& file = c.file;
  const std::string steps_key = one_of(t, kNumbStepsNames, "training", file);
  const std::string epoch_key = one_of(t, kNumEpochNames, "training", file);
  if (!steps_key.empty() && !epoch_key.empty()) {
    throw ConfigError("training." + steps_key + " and training." + epoch_key + " in " + file +
                      " both set the length of the run: keep one");
  }
  if (steps_key.empty() && epoch_key.empty())
    throw ConfigError("missing required key 'training.numb_steps' (or 'training.num_epoch') in " + file);
  if (!steps_key.empty()) {
    c.numb_steps = get_required<std::int64_t>(t, steps_key, "training", file);
    require(c.numb_steps >= 1, file, "training." + steps_key, json(c.numb_steps), "must be at least 1");
  } else {
    c.numb_epoch = get_required<double>(t, epoch_key, "training", file);
    require(c.numb_epoch > 0.0 && c.numb_epoch < 1e9, file, "training." + epoch_key, t.at(epoch_key),
            "must be a positive number of passes over the training frames");
  }
}

// Displays, checkpoints, device, threads, the moving average and the calibration.
void read_run_settings(const json& doc, const json& t, TrainConfig& c) {
  const std::string& file = c.file;
  c.seed = get_or<std::uint64_t>(t, "seed", c.seed, "training", file);
  c.disp_freq = get_or<int>(t, "disp_freq", c.disp_freq, "training", file);
  require(c.disp_freq >= 1, file, "training.disp_freq", json(c.disp_freq), "must be at least 1");
  c.save_freq = get_or<int>(t, "save_freq", c.save_freq, "training", file);
  require(c.save_freq >= 1, file, "training.save_freq", json(c.save_freq), "must be at least 1");
  c.save_in_background = t.value("save_in_background", c.save_in_background);
  require(c.save_in_background == "auto" || c.save_in_background == "journal" ||
              c.save_in_background.is_boolean(),
          file, "training.save_in_background", c.save_in_background,
          "must be \"auto\", \"journal\", true or false");
  c.disp_file = get_or<std::string>(t, "disp_file", c.disp_file, "training", file);
  c.save_ckpt = get_or<std::string>(t, "save_ckpt", c.save_ckpt, "training", file);
  c.device = get_or<std::string>(doc, "device", c.device, "", file);
  c.device = get_or<std::string>(t, "device", c.device, "training", file);
  require(c.device == "auto" || c.device == "cpu" || c.device.rfind("cuda", 0) == 0, file, "device",
          json(c.device), "must be \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
  c.num_threads = get_or<int>(t, "num_threads", 0, "training", file);
  c.change_bias_after_training =
      get_or<bool>(t, "change_bias_after_training", c.change_bias_after_training, "training", file);
  require(c.num_threads >= 0, file, "training.num_threads", json(c.num_threads), "must not be negative");
  c.enable_ema = get_or<bool>(t, "enable_ema", c.enable_ema, "training", file);
  c.ema_decay = get_or<double>(t, "ema_decay", c.ema_decay, "training", file);
  require(c.ema_decay >= 0.0 && c.ema_decay < 1.0, file, "training.ema_decay", json(c.ema_decay),
          "must be at least 0 and less than 1");
  const json frames = t.value("calibration_frames", json("auto"));
  require(frames == "auto" || (frames.is_number_integer() && frames.get<std::int64_t>() >= 0), file,
          "training.calibration_frames", frames, "must be \"auto\" or a number of frames, 0 or more");
  c.calibration_frames = frames == "auto" ? TrainConfig::kCalibrationAuto : frames.get<std::int64_t>();
}

}  // namespace

TrainConfig TrainConfig::from_file(const std::string& path) {
  const json doc = read_json_file(path, "input file ");
  const fs::path parent = fs::absolute(fs::path(path)).parent_path();
  return from_json(doc, path, parent.string());
}

TrainConfig TrainConfig::from_json(const json& doc, const std::string& file, const std::string& base_dir) {
  TrainConfig c;
  c.file = file;
  c.base_dir = base_dir;
  check_keys(doc, "",
             joined({"model", "learning_rate", "loss", "training", "optimizer", "device"}, kIgnoredTop),
             file);
  note_ignored(doc, "", kIgnoredTop, c.ignored_keys);
  if (!doc.contains("model")) throw ConfigError("missing required section 'model' in " + file);
  c.model = doc.at("model");
  require(c.model.is_object(), file, "model", c.model,
          "must be an object (type_map, descriptor, fitting_net)");
  // The data is opened under the model's type map before the model is built: check it now.
  if (c.model.contains("type_map")) (void)ModelConfig::read_type_map(c.model, file);
  if (!doc.contains("training")) throw ConfigError("missing required section 'training' in " + file);
  const json& t = doc.at("training");

  std::vector<std::string> training_keys = {"training_data",
                                            "validation_data",
                                            "seed",
                                            "disp_file",
                                            "disp_freq",
                                            "save_freq",
                                            "save_ckpt",
                                            "save_in_background",
                                            "validation_fraction",
                                            "validation_split",
                                            "device",
                                            "num_threads",
                                            "calibration_frames",
                                            "opt_type",
                                            "change_bias_after_training",
                                            "enable_ema",
                                            "ema_decay"};
  training_keys = joined(
      joined(joined(joined(training_keys, kNumbStepsNames), kNumEpochNames), optimizer_keys("training")),
      kIgnoredTraining);
  check_keys(t, "training", training_keys, file);
  note_ignored(t, "training", kIgnoredTraining, c.ignored_keys);

  read_optimizer(doc, t, c);

  if (!t.contains("training_data"))
    throw ConfigError("missing required key 'training.training_data' in " + file);
  c.training_data =
      read_data_section(t.at("training_data"), "training.training_data", file, false, c.ignored_keys);
  if (t.contains("validation_data") && !t.at("validation_data").is_null()) {
    c.validation_data =
        read_data_section(t.at("validation_data"), "training.validation_data", file, true, c.ignored_keys);
  }
  c.validation_fraction = get_or<double>(t, "validation_fraction", 0.0, "training", file);
  require(c.validation_fraction >= 0.0 && c.validation_fraction < 1.0, file, "training.validation_fraction",
          json(c.validation_fraction), "must be in [0, 1)");
  c.validation_split = get_or<std::string>(t, "validation_split", "frame", "training", file);
  require(c.validation_split == "frame" || c.validation_split == "system", file, "training.validation_split",
          json(c.validation_split), "must be \"frame\" or \"system\"");

  read_run_length(t, c);
  read_run_settings(doc, t, c);
  return c;
}

std::string TrainConfig::resolve_numb_steps(std::int64_t batches_per_epoch) {
  if (numb_epoch <= 0.0) return "";
  numb_steps = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::ceil(numb_epoch * static_cast<double>(batches_per_epoch) - 1e-9)));
  return fmt::format("num_epoch {} x {} batches per epoch: {} steps", numb_epoch, batches_per_epoch,
                     numb_steps);
}

json TrainConfig::to_json() const {
  auto data = [](const DataSection& d, bool validation) {
    json j = {{"systems", d.systems}};
    if (validation) j["numb_btch"] = d.numb_btch;
    if (!d.repeat.empty()) j["repeat"] = d.repeat;
    if (!d.sys_probs.empty()) j["sys_probs"] = d.sys_probs;
    if (!d.auto_prob.empty()) j["auto_prob"] = d.auto_prob;
    j["batch_size"] = batch_size_json(d);
    return j;
  };
  json out;
  out["model"] = model;
  out["optimizer"] = optimizer_settings;
  json t = {{"training_data", data(training_data, false)},
            {"numb_steps", numb_steps},
            {"seed", seed},
            {"disp_file", disp_file},
            {"disp_freq", disp_freq},
            {"save_freq", save_freq},
            {"save_in_background", save_in_background},
            {"save_ckpt", save_ckpt},
            {"device", device},
            {"num_threads", num_threads},
            {"change_bias_after_training", change_bias_after_training},
            {"enable_ema", enable_ema},
            {"ema_decay", ema_decay},
            {"calibration_frames",
             calibration_frames == kCalibrationAuto ? json("auto") : json(calibration_frames)},
            {"validation_fraction", validation_fraction},
            {"validation_split", validation_split}};
  if (!validation_data.systems.empty()) t["validation_data"] = data(validation_data, true);
  out["training"] = t;
  return out;
}

std::int64_t TrainConfig::calibration_frames_for(std::int64_t steps) const {
  if (calibration_frames != kCalibrationAuto) return calibration_frames;
  return std::min<std::int64_t>(steps / 10, 64);
}

}  // namespace deepkf
