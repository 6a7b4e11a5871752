#include "src/learn/LearnConfig.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "src/core/Error.hpp"
#include "src/core/JsonFile.hpp"
#include "src/core/JsonKeys.hpp"

namespace deepkf {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// One section of loop.json: typed reads that name "<section>.<key>" and the file in every error.
struct Section {
  const json& s;
  std::string path;  // "explore"
  const std::string& file;
  const std::string& base_dir;

  std::string key(const std::string& k) const { return path.empty() ? k : path + "." + k; }
  bool has(const std::string& k) const { return s.contains(k) && !s.at(k).is_null(); }
  template <typename T>
  T get(const std::string& k, const T& fallback) const {
    return get_or<T>(s, k, fallback, path, file);
  }
  template <typename T>
  T required(const std::string& k) const {
    if (!has(k)) throw ConfigError(fmt::format("missing required key '{}' in {}", key(k), file));
    return get_required<T>(s, k, path, file);
  }
  int count(const std::string& k, int fallback, int least = 1) const {
    const int v = get<int>(k, fallback);
    if (v < least) reject_value(key(k), json(v), fmt::format("must be at least {}", least), file);
    return v;
  }
  double positive(const std::string& k, double fallback) const {
    const double v = get<double>(k, fallback);
    if (!(v > 0.0) || !std::isfinite(v)) reject_value(key(k), json(v), "must be a positive number", file);
    return v;
  }
  // A number or a list of numbers, as a list.
  template <typename T>
  std::vector<T> list(const std::string& k) const {
    if (!has(k)) return {};
    const json& v = s.at(k);
    std::vector<T> out;
    for (const auto& item : v.is_array() ? v : json::array({v}))
      out.push_back(json_value<T>(item, key(k), file));
    return out;
  }
  // An existing file or folder named relative to loop.json ("file.h5#group" keeps its group).
  std::string existing_path(const std::string& value, const std::string& k) const {
    const auto hash = value.find('#');
    const std::string part = value.substr(0, hash);
    fs::path p(part);
    if (p.is_relative()) p = fs::path(base_dir) / p;
    p = p.lexically_normal();
    std::error_code ec;
    if (part.empty() || !fs::exists(p, ec))
      reject_value(key(k), json(value), p.string() + " does not exist", file);
    return p.string() + (hash == std::string::npos ? "" : value.substr(hash));
  }
  std::string program(const std::string& k, const std::string& fallback) const {
    const std::string v = get<std::string>(k, fallback);
    if (v.empty() && !fallback.empty()) reject_value(key(k), json(v), "must name a program", file);
    return v;
  }
};

Section section(const json& doc, const std::string& name, const std::string& file, const std::string& base,
                const std::vector<std::string>& known, bool required) {
  static const json kEmpty = json::object();
  if (!doc.contains(name)) {
    if (required) throw ConfigError(fmt::format("missing required section '{}' in {}", name, file));
    return Section{kEmpty, name, file, base};
  }
  check_keys(doc.at(name), name, known, file);
  return Section{doc.at(name), name, file, base};
}

LearnTrainConfig read_train(const Section& t) {
  LearnTrainConfig c;
  c.input = t.existing_path(t.required<std::string>("input"), "input");
  c.models = t.count("models", c.models);
  c.init_steps = t.required<std::int64_t>("init_steps");
  if (c.init_steps < 1) reject_value(t.key("init_steps"), json(c.init_steps), "must be at least 1", t.file);
  c.steps = t.required<std::int64_t>("steps");
  if (c.steps < 1) reject_value(t.key("steps"), json(c.steps), "must be at least 1", t.file);
  c.new_frame_repeat = t.count("new_frame_repeat", c.new_frame_repeat);
  c.reset_factor = t.get<double>("reset_factor", c.reset_factor);
  if (!(c.reset_factor >= 0.0) || !std::isfinite(c.reset_factor))
    reject_value(t.key("reset_factor"), json(c.reset_factor), "must be a number >= 0 (0: never reset)",
                 t.file);
  for (const auto& m : t.list<std::string>("init_models"))
    c.init_models.push_back(t.existing_path(m, "init_models"));
  if (!c.init_models.empty() && c.init_models.size() != 1 &&
      static_cast<int>(c.init_models.size()) != c.models) {
    reject_value(t.key("init_models"), t.s.at("init_models"),
                 fmt::format("must name one model file, or one per member ({})", c.models), t.file);
  }
  c.deepkf = t.get<std::string>("deepkf", "");
  c.mpirun = t.program("mpirun", c.mpirun);
  c.ranks = t.count("ranks", c.ranks);
  c.jobs = t.count("jobs", c.jobs);
  return c;
}

std::vector<StartStructure> read_structures(const Section& e) {
  if (!e.has("structures"))
    throw ConfigError(fmt::format("missing required key 'explore.structures' in {}", e.file));
  const json& list = e.s.at("structures");
  const std::string rule = "must be a list of paths or of {\"path\", \"frames\", \"replicate\"} objects";
  if (!list.is_array() || list.empty()) reject_value(e.key("structures"), list, rule, e.file);
  std::vector<StartStructure> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& item = list[i];
    const std::string where = fmt::format("structures[{}]", i);
    StartStructure s;
    if (item.is_string()) {
      s.path = e.existing_path(item.get<std::string>(), where);
    } else if (item.is_object()) {
      check_keys(item, e.key(where), {"path", "frames", "replicate"}, e.file);
      const Section one{item, e.key(where), e.file, e.base_dir};
      s.path = one.existing_path(one.required<std::string>("path"), "path");
      if (one.has("frames")) s.frames = one.list<std::int64_t>("frames");
      for (auto f : s.frames)
        if (f < 0)
          reject_value(one.key("frames"), item.at("frames"), "frame indices must not be negative", e.file);
      if (one.has("replicate")) {
        const auto r = one.list<int>("replicate");
        if (r.size() != 3 || r[0] < 1 || r[1] < 1 || r[2] < 1)
          reject_value(one.key("replicate"), item.at("replicate"), "must be three positive integers", e.file);
        s.replicate = {r[0], r[1], r[2]};
      }
    } else {
      reject_value(e.key(where), item, rule, e.file);
    }
    out.push_back(s);
  }
  return out;
}

ExploreConfig read_explore(const Section& e) {
  ExploreConfig c;
  c.lmp = e.program("lmp", c.lmp);
  if (e.has("plugin")) c.plugin = e.existing_path(e.get<std::string>("plugin", ""), "plugin");
  c.mpirun = e.program("mpirun", c.mpirun);
  c.ranks = e.count("ranks", c.ranks);
  c.jobs = e.count("jobs", c.jobs);
  c.structures = read_structures(e);
  c.ensemble = e.get<std::string>("ensemble", c.ensemble);
  if (c.ensemble != "nvt" && c.ensemble != "npt")
    reject_value(e.key("ensemble"), json(c.ensemble), "must be \"nvt\" or \"npt\"", e.file);
  c.temperatures = e.list<double>("temperatures");
  if (c.temperatures.empty())
    throw ConfigError(fmt::format("missing required key 'explore.temperatures' in {}", e.file));
  for (double t : c.temperatures)
    if (!(t > 0.0))
      reject_value(e.key("temperatures"), e.s.at("temperatures"), "must be positive (K)", e.file);
  c.pressures = e.list<double>("pressures");
  if (c.ensemble == "npt" && c.pressures.empty())
    throw ConfigError(
        fmt::format("'explore.ensemble' in {} is \"npt\": 'explore.pressures' (bar) is required", e.file));
  if (c.ensemble == "nvt" && !c.pressures.empty())
    reject_value(e.key("pressures"), e.s.at("pressures"), "is only used with \"ensemble\": \"npt\"", e.file);
  c.barostat = e.get<std::string>("barostat", c.barostat);
  if (c.barostat != "iso" && c.barostat != "aniso" && c.barostat != "tri")
    reject_value(e.key("barostat"), json(c.barostat), "must be \"iso\", \"aniso\" or \"tri\"", e.file);
  c.steps = e.list<std::int64_t>("steps");
  if (c.steps.empty()) throw ConfigError(fmt::format("missing required key 'explore.steps' in {}", e.file));
  for (auto n : c.steps)
    if (n < 1) reject_value(e.key("steps"), e.s.at("steps"), "must be at least 1", e.file);
  c.timestep = e.positive("timestep", c.timestep);
  c.dump_freq = e.count("dump_freq", c.dump_freq);
  c.thermostat_damping = e.positive("thermostat_damping", c.thermostat_damping);
  c.barostat_damping = e.positive("barostat_damping", c.barostat_damping);
  if (e.has("masses")) {
    const json& m = e.s.at("masses");
    if (!m.is_object()) reject_value(e.key("masses"), m, "must map element names to masses (g/mol)", e.file);
    for (const auto& [element, value] : m.items()) {
      const double mass = json_value<double>(value, e.key("masses." + element), e.file);
      if (!(mass > 0.0)) reject_value(e.key("masses." + element), value, "must be positive (g/mol)", e.file);
      c.masses[element] = mass;
    }
  }
  return c;
}

SelectConfig read_select(const Section& s) {
  SelectConfig c;
  c.method = s.get<std::string>("method", c.method);
  if (c.method != "model_deviation" && c.method != "kalman_sigma" && c.method != "random") {
    reject_value(s.key("method"), json(c.method),
                 "must be \"model_deviation\" (the ensemble's maximum force deviation), \"kalman_sigma\" "
                 "(one RLEKF model's predicted force sigma) or \"random\" (frames drawn at random, a "
                 "baseline)",
                 s.file);
  }
  if (s.has("force_atoms") && c.method != "kalman_sigma")
    reject_value(s.key("force_atoms"), s.s.at("force_atoms"),
                 "is used only with select.method \"kalman_sigma\"", s.file);
  if (s.has("force_atoms")) {
    const json& v = s.s.at("force_atoms");
    if (v == "all") {
      c.force_atoms = 0;
    } else if (v.is_number_integer() && v.get<std::int64_t>() >= 1) {
      c.force_atoms = v.get<std::int64_t>();
    } else {
      reject_value(s.key("force_atoms"), v, "must be a number of atoms (at least 1) or \"all\"", s.file);
    }
  }
  if (c.method == "random") {
    // Every explored frame is a candidate: there is no window.
    for (const char* unused : {"trust_lo", "trust_hi", "relative"})
      if (s.has(unused))
        reject_value(s.key(unused), s.s.at(unused), "is not used with select.method \"random\"", s.file);
    c.trust_lo = -std::numeric_limits<double>::infinity();
    c.trust_hi = std::numeric_limits<double>::infinity();
    c.max_frames = s.count("max_frames", c.max_frames);
    c.min_distance = s.get<double>("min_distance", c.min_distance);
    if (!(c.min_distance >= 0.0))
      reject_value(s.key("min_distance"), json(c.min_distance), "must be >= 0 (A)", s.file);
    return c;
  }
  c.trust_lo = s.required<double>("trust_lo");
  c.trust_hi = s.required<double>("trust_hi");
  if (!(c.trust_lo >= 0.0) || !std::isfinite(c.trust_lo))
    reject_value(s.key("trust_lo"), json(c.trust_lo), "must be a number >= 0", s.file);
  if (!(c.trust_hi > c.trust_lo) || std::isnan(c.trust_hi))
    reject_value(s.key("trust_hi"), json(c.trust_hi),
                 fmt::format("must be above trust_lo ({:g})", c.trust_lo), s.file);
  c.relative = s.get<bool>("relative", c.relative);
  c.max_frames = s.count("max_frames", c.max_frames);
  c.min_distance = s.get<double>("min_distance", c.min_distance);
  if (!(c.min_distance >= 0.0))
    reject_value(s.key("min_distance"), json(c.min_distance), "must be >= 0 (A)", s.file);
  return c;
}

LabelConfig read_label(const Section& l) {
  LabelConfig c;
  c.cp2k = l.program("cp2k", c.cp2k);
  c.mpirun = l.program("mpirun", c.mpirun);
  c.template_path = l.existing_path(l.required<std::string>("template"), "template");
  if (l.has("kinds")) {
    const json& k = l.s.at("kinds");
    const std::string rule = "must map element names to [basis set, potential]";
    if (!k.is_object()) reject_value(l.key("kinds"), k, rule, l.file);
    for (const auto& [element, pair] : k.items()) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
        reject_value(l.key("kinds." + element), pair, rule, l.file);
      c.kinds[element] = {pair[0].get<std::string>(), pair[1].get<std::string>()};
    }
  }
  if (l.has("kpoint_spacing")) c.kpoint_spacing = l.positive("kpoint_spacing", 0.0);
  c.ranks = l.count("ranks", c.ranks);
  c.threads = l.count("threads", c.threads);
  c.jobs = l.count("jobs", c.jobs);
  if (l.has("timeout")) c.timeout_s = l.positive("timeout", 0.0);
  return c;
}

}  // namespace

LearnConfig LearnConfig::from_file(const std::string& path) {
  const json doc = read_json_file(path, "input file ");
  LearnConfig c;
  c.file = path;
  c.base_dir = fs::absolute(path).parent_path().lexically_normal().string();
  check_keys(
      doc, "",
      {"iterations", "stop_candidate_fraction", "seed", "train", "explore", "select", "label", "test_data"},
      path);
  const Section top{doc, "", c.file, c.base_dir};
  c.iterations = top.count("iterations", c.iterations, 0);
  c.stop_candidate_fraction = top.get<double>("stop_candidate_fraction", c.stop_candidate_fraction);
  if (!(c.stop_candidate_fraction >= 0.0 && c.stop_candidate_fraction < 1.0))
    reject_value("stop_candidate_fraction", json(c.stop_candidate_fraction), "must be in [0, 1)", path);
  c.seed = top.get<std::uint64_t>("seed", c.seed);
  for (const auto& t : top.list<std::string>("test_data"))
    c.test_data.push_back(top.existing_path(t, "test_data"));

  c.train = read_train(section(doc, "train", path, c.base_dir,
                               {"input", "models", "init_steps", "steps", "new_frame_repeat", "init_models",
                                "reset_factor", "deepkf", "mpirun", "ranks", "jobs"},
                               true));
  c.explore = read_explore(section(
      doc, "explore", path, c.base_dir,
      {"lmp", "plugin", "mpirun", "ranks", "jobs", "structures", "ensemble", "temperatures", "pressures",
       "barostat", "steps", "timestep", "dump_freq", "thermostat_damping", "barostat_damping", "masses"},
      true));
  c.select = read_select(section(
      doc, "select", path, c.base_dir,
      {"method", "trust_lo", "trust_hi", "relative", "max_frames", "min_distance", "force_atoms"}, true));
  c.label = read_label(section(
      doc, "label", path, c.base_dir,
      {"cp2k", "mpirun", "template", "kinds", "kpoint_spacing", "ranks", "threads", "jobs", "timeout"},
      true));
  if (c.select.method == "model_deviation" && c.train.models < 2) {
    reject_value("train.models", json(c.train.models),
                 "must be at least 2 with select.method \"model_deviation\" (the deviation of an ensemble)",
                 path);
  }
  return c;
}

}  // namespace deepkf
