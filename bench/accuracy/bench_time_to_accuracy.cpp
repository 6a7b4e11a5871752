// Time to accuracy: RLEKF against Adam on the same model and data in one run. Validation energy and force
// RMSE (all validation frames) against wall time and epochs, as a table (markdown) and a plot (SVG).
//
// usage: bench_time_to_accuracy DATASET [KF_EPOCHS] [ADAM_EPOCHS] [OUT_DIR] [DATASETS_DIR] [P0] [RUN...]
//   DATASET: si (si_mlearn train/ vs test/), water (water data_0..2 vs data_3), si_cp2k (the project's
//   data/si_cp2k.h5, 20% held out) or cho_nopbc (10% held out), as bench/accuracy/first_epoch.sh
//   KF_EPOCHS / ADAM_EPOCHS: training length of each optimizer (defaults 3 and 12: an Adam step is
//   cheaper, so it gets more epochs; compare the curves against wall time); ADAM_EPOCHS 0 skips Adam
//   OUT_DIR (default bench-accuracy-DATASET): training outputs, curves.svg, table.md
//   DATASETS_DIR (relative to the current directory) defaults to <source>/../shared/datasets
//   P0: RLEKF's initial covariance scale, a number or "auto" (the default: the input has no p0)
//   RUN: NAME={KEYS}, an RLEKF run whose optimizer section is {"type": "RLEKF"} with the JSON object KEYS
//   merged in (the product's defaults otherwise, kf_blocksize included); without any, one run named
//   RLEKF with kf_blocksize 2048 (the earlier tables of docs/benchmarks.md were made so)
//   Environment: DEEPKF_TTA_POINTS, validation points per run (default 12); DEEPKF_TTA_SEED, the
//   training seed (data order and atom draws; default 1; the initial weights stay seed 1)
//
// The wall time of a point is the training time only: the validation passes are timed and subtracted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "src/core/AtomicFile.hpp"
#include "src/core/Communicator.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/eval/SvgPlot.hpp"
#include "src/train/Trainer.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Point {
  double epoch, wall, rmse_e, rmse_f;
};

// The same small se_e2_a model for both optimizers (fits 2 cores; the reference water model does not).
// rcut_smth 0.5 as in bench/accuracy/first_epoch.sh, except si_mlearn's 2.0 of the earlier tables.
json model_section(const std::string& dataset) {
  json m = json::parse(R"({"descriptor": {"type": "se_e2_a", "rcut": 5.0, "rcut_smth": 0.5, "sel": "auto",
                     "neuron": [8, 16, 32], "axis_neuron": 8, "type_one_side": true, "seed": 1},
      "fitting_net": {"neuron": [32, 32, 32], "resnet_dt": true, "seed": 1}})");
  if (dataset == "si") m["descriptor"]["rcut_smth"] = 2.0;
  m["type_map"] = dataset == "water"       ? json::array({"O", "H"})
                  : dataset == "cho_nopbc" ? json::array({"C", "H", "O"})
                                           : json::array({"Si"});
  return m;
}

// One run: a name, and the optimizer section's keys beyond "type" (null for Adam).
struct Run {
  std::string name;
  json keys;
};

// The training section's data, and the number of training frames (an epoch's steps at batch size 1).
json data_section(const std::string& dataset, const std::string& datasets, double* frames) {
  std::vector<std::string> train_sys, valid_sys;
  double held_out = 0.0;
  if (dataset == "si") {
    train_sys = {datasets + "/si_mlearn/train"};
    valid_sys = {datasets + "/si_mlearn/test"};
  } else if (dataset == "water") {
    for (int k = 0; k < 3; ++k) train_sys.push_back(datasets + "/water/data_" + std::to_string(k));
    valid_sys = {datasets + "/water/data_3"};
  } else if (dataset == "si_cp2k") {
    train_sys = {std::string(DEEPKF_SOURCE_DIR) + "/data/si_cp2k.h5"};
    held_out = 0.2;
  } else {
    train_sys = {datasets + "/cho_nopbc"};
    held_out = 0.1;
  }
  json section = {{"training_data", {{"systems", train_sys}, {"batch_size", 1}}}};
  std::vector<std::int64_t> nframes;  // frame counts only: the systems are opened, not read
  for (const auto& s : deepkf::open_dataset(train_sys).systems) nframes.push_back(s->nframes());
  if (held_out > 0.0) {
    section["validation_fraction"] = held_out;
    *frames = 0.0;
    for (const auto& part : deepkf::split_frames(nframes, held_out, deepkf::SplitMode::kFrame, 1).train)
      *frames += static_cast<double>(part.frames.size());
  } else {
    section["validation_data"] = {{"systems", valid_sys}, {"batch_size", 1}, {"numb_btch", 1}};
    *frames = static_cast<double>(std::accumulate(nframes.begin(), nframes.end(), std::int64_t{0}));
  }
  return section;
}

// Trains one run for `epochs`, validating on every validation frame every `every` steps.
std::vector<Point> train(const std::string& dataset, const std::string& datasets, const Run& run,
                         double epochs, const std::string& out_dir) {
  json doc;
  double frames = 0.0;
  doc["model"] = model_section(dataset);
  doc["training"] = data_section(dataset, datasets, &frames);
  const char* seed_env = std::getenv("DEEPKF_TTA_SEED");
  doc["training"]["seed"] = seed_env ? std::atoi(seed_env) : 1;
  doc["training"]["save_freq"] = 100000000;
  const auto steps = static_cast<std::int64_t>(epochs * frames);
  const char* points_env = std::getenv("DEEPKF_TTA_POINTS");
  const std::int64_t points = points_env ? std::max(1, std::atoi(points_env)) : 12;
  const std::int64_t every = std::max<std::int64_t>(1, steps / points);
  if (!run.keys.is_null()) {
    doc["optimizer"] = {{"type", "RLEKF"}};
    doc["optimizer"].update(run.keys);
  } else {
    // DeePMD-kit's schedule: lr from 1e-3 decaying to 1e-5 over the run.
    doc["optimizer"] = {
        {"type", "Adam"},
        {"learning_rate",
         {{"start_lr", 1e-3}, {"stop_lr", 1e-5}, {"decay_steps", std::max<std::int64_t>(1, steps / 40)}}}};
  }
  std::vector<Point> curve;
  double train_wall = 0.0;
  std::string restart;
  fs::create_directories(out_dir);
  // Runs of `every` steps, each continuing exactly from the last one's checkpoint, so that validating on
  // every frame between them costs no training time.
  for (std::int64_t done = 0; done < steps;) {
    const std::int64_t next = std::min(steps, done + every);
    doc["training"]["numb_steps"] = steps;  // the schedules (lr, prefactors) follow numb_steps
    doc["training"]["disp_freq"] = every;
    deepkf::TrainerOptions opt;
    opt.output_dir = out_dir;
    opt.progress = 0;
    opt.restart = restart;
    opt.pause_at = next;
    opt.write_model = next == steps;
    deepkf::Trainer trainer(deepkf::TrainConfig::from_json(doc, out_dir + "/input.json", "/"), opt,
                            deepkf::make_serial_communicator());
    const auto r = trainer.run();
    train_wall += r.wall_seconds;  // includes one one-frame validation display; small against the steps
    done = next;
    restart = r.checkpoint;
    curve.push_back(
        {static_cast<double>(done) / frames, train_wall, r.validation.rmse_e(), r.validation.rmse_f()});
    std::fprintf(stderr, "%s %s epoch %.2f wall %.1f s: rmse_e %.3e eV/atom rmse_f %.3e eV/A\n",
                 dataset.c_str(), run.name.c_str(), curve.back().epoch, curve.back().wall,
                 curve.back().rmse_e, curve.back().rmse_f);
  }
  return curve;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: bench_time_to_accuracy si|water|si_cp2k|cho_nopbc [KF_EPOCHS] [ADAM_EPOCHS] [OUT_DIR] "
        "[DATASETS_DIR] [P0] [NAME=KEYS...]\n");
    return 2;
  }
  const std::string dataset = argv[1];
  if (dataset != "si" && dataset != "water" && dataset != "si_cp2k" && dataset != "cho_nopbc") {
    std::fprintf(stderr, "unknown dataset '%s' (si, water, si_cp2k or cho_nopbc)\n", dataset.c_str());
    return 2;
  }
  const double kf_epochs = argc > 2 ? std::atof(argv[2]) : 3.0;
  const double adam_epochs = argc > 3 ? std::atof(argv[3]) : 12.0;
  const std::string out = argc > 4 ? argv[4] : "bench-accuracy-" + dataset;
  // Absolute, since the inputs built below resolve relative system paths against "/".
  const std::string datasets =
      fs::absolute(argc > 5 ? argv[5] : std::string(DEEPKF_SOURCE_DIR) + "/../shared/datasets").string();
  const std::string p0 = argc > 6 ? argv[6] : "auto";  // a number, or "auto" (the default: no p0 key)
  std::vector<Run> runs;
  for (int k = 7; k < argc; ++k) {
    const std::string arg = argv[k];
    const auto eq = arg.find('=');
    json keys = eq == std::string::npos ? json() : json::parse(arg.substr(eq + 1), nullptr, false);
    if (!keys.is_object()) {
      std::fprintf(stderr, "'%s' is not NAME={JSON object of optimizer keys}\n", arg.c_str());
      return 2;
    }
    runs.push_back({arg.substr(0, eq), keys});
  }
  if (runs.empty()) runs.push_back({"RLEKF", {{"kf_blocksize", 2048}}});
  for (auto& r : runs)
    if (p0 != "auto") r.keys["p0"] = std::stod(p0);
  if (adam_epochs > 0.0) runs.push_back({"Adam", json()});

  std::vector<std::pair<std::string, std::vector<Point>>> curves;
  for (const auto& r : runs) {
    const bool adam = r.keys.is_null();
    const auto dir = out + "/" + (adam ? std::string("adam") : r.name == "RLEKF" ? "rlekf" : r.name);
    curves.emplace_back(r.name, train(dataset, datasets, r, adam ? adam_epochs : kf_epochs, dir));
  }

  std::string table =
      "| optimizer | epoch | train wall (s) | val rmse_e (meV/atom) | val rmse_f (meV/A) "
      "|\n|---|---|---|---|---|\n";
  std::vector<deepkf::PlotPanel> panels(3);
  panels[0] = {
      "force RMSE vs wall time", "training wall time (s)", "validation force RMSE (eV/A)", true, false, {}};
  panels[1] = {"force RMSE vs epochs", "epoch", "validation force RMSE (eV/A)", true, false, {}};
  panels[2] = {"energy RMSE vs wall time",
               "training wall time (s)",
               "validation energy RMSE (eV/atom)",
               true,
               false,
               {}};
  for (const auto& [name, curve] : curves) {
    deepkf::PlotSeries fw{name, {}, {}, true, {}}, fe{name, {}, {}, true, {}}, ew{name, {}, {}, true, {}};
    for (const auto& p : curve) {
      table += "| " + name + " | " + std::to_string(p.epoch).substr(0, 5) + " | " +
               std::to_string(p.wall).substr(0, 6) + " | " + std::to_string(1e3 * p.rmse_e).substr(0, 6) +
               " | " + std::to_string(1e3 * p.rmse_f).substr(0, 6) + " |\n";
      fw.x.push_back(p.wall), fw.y.push_back(p.rmse_f);
      fe.x.push_back(p.epoch), fe.y.push_back(p.rmse_f);
      ew.x.push_back(p.wall), ew.y.push_back(p.rmse_e);
    }
    panels[0].series.push_back(fw), panels[1].series.push_back(fe), panels[2].series.push_back(ew);
  }
  deepkf::write_text_atomically(out + "/curves.svg", deepkf::render_svg(panels));
  deepkf::write_text_atomically(out + "/table.md", table);
  std::printf("%s", table.c_str());
  std::printf("plot: %s/curves.svg\n", out.c_str());
  return 0;
}
