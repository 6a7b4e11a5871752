#include "tests/fuzz/Readers.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/core/Checksum.hpp"
#include "src/core/Communicator.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DeepmdHdf5.hpp"
#include "src/data/DeepmdNpy.hpp"
#include "src/data/LammpsDump.hpp"
#include "src/model/ModelFile.hpp"
#include "src/train/Checkpoint.hpp"
#include "src/train/RunPlan.hpp"
#include "src/train/Trainer.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace deepkf::fuzz {
namespace {

// An extended XYZ file of `s` as ASE writes one: Lattice, energy and pbc on the comment line, forces as
// columns, the virial as a key.
void write_extxyz(const std::string& path, const System& s) {
  std::ofstream out(path);
  const auto n = static_cast<std::size_t>(s.natoms);
  for (std::size_t f = 0; f < static_cast<std::size_t>(s.nframes); ++f) {
    out << s.natoms << "\n";
    if (s.periodic) {
      out << "Lattice=\"";
      for (std::size_t k = 0; k < 9; ++k) out << (k ? " " : "") << fmt::format("{:.10g}", s.box[9 * f + k]);
      out << "\" ";
    }
    out << "Properties=species:S:1:pos:R:3" << (s.has_force() ? ":forces:R:3" : "")
        << fmt::format(" energy={:.12g}", s.energy[f]);
    if (s.has_virial()) {
      out << " virial=\"";
      for (std::size_t k = 0; k < 9; ++k)
        out << (k ? " " : "") << fmt::format("{:.10g}", s.virial[9 * f + k]);
      out << "\"";
    }
    out << (s.periodic ? " pbc=\"T T T\"\n" : " pbc=\"F F F\"\n");
    for (std::size_t a = 0; a < n; ++a) {
      const std::size_t i = 3 * (f * n + a);
      out << s.type_map[static_cast<std::size_t>(s.atom_types[a])]
          << fmt::format(" {:.10f} {:.10f} {:.10f}", s.coord[i], s.coord[i + 1], s.coord[i + 2]);
      if (s.has_force())
        out << fmt::format(" {:.10f} {:.10f} {:.10f}", s.force[i], s.force[i + 1], s.force[i + 2]);
      out << "\n";
    }
  }
}

// A LAMMPS text dump of `s`, atoms written in reverse id order: with a type column (LAMMPS type t + 1 for
// type index t) or with an element column.
void write_dump(const std::string& path, const System& s, bool elements) {
  std::ofstream out(path);
  const auto n = static_cast<std::size_t>(s.natoms);
  for (std::size_t f = 0; f < static_cast<std::size_t>(s.nframes); ++f) {
    const double* h = s.box.data() + 9 * f;  // a cubic cell (the water frames)
    out << "ITEM: TIMESTEP\n"
        << 10 * f << "\nITEM: NUMBER OF ATOMS\n"
        << n << "\nITEM: BOX BOUNDS pp pp pp\n"
        << fmt::format("0 {:.10g}\n0 {:.10g}\n0 {:.10g}\n", h[0], h[4], h[8]) << "ITEM: ATOMS id "
        << (elements ? "element" : "type") << " x y z\n";
    for (std::size_t a = n; a-- > 0;) {
      const std::size_t i = 3 * (f * n + a);
      const auto t = static_cast<std::size_t>(s.atom_types[a]);
      out << a + 1 << " " << (elements ? s.type_map[t] : std::to_string(t + 1))
          << fmt::format(" {:.10f} {:.10f} {:.10f}\n", s.coord[i], s.coord[i + 1], s.coord[i + 2]);
    }
  }
}

// Every frame of a dump, read and checked as `deepkf uncertainty` reads them (LAMMPS types 1 and 2 are O
// and H).
std::string read_dump(const std::string& path) {
  for (auto& s : read_lammps_dump(path, {"O", "H"}).systems) MemoryFrameSource(std::move(s)).read_all();
  return {};
}

json small_model() {
  return json::parse(R"({
    "type_map": ["O", "H", "Si"],
    "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": "auto", "neuron": [4, 8],
                   "axis_neuron": 2, "seed": 1},
    "fitting_net": {"neuron": [8, 8], "seed": 1}})");
}

// Every frame of the data under `path` (as `deepkf data summary` reads it), the frames counted by the
// independent scan too.
std::string read_data(const std::string& path) {
  std::int64_t frames = 0;
  for (const auto& source : open_systems(path)) frames += source->read_all().nframes;
  const std::int64_t found = count_frames_found(path);
  return fmt::format("{} frames read, {} found", frames, found);
}

void add_tensor(Crc32& crc, const std::string& name, const torch::Tensor& t) {
  const auto c = t.contiguous().cpu();
  crc.update(name);
  crc.update(c.data_ptr(), static_cast<std::size_t>(c.numel()) * c.element_size());
}

void add_model(Crc32& crc, const DeepPot& model) {
  for (const auto& p : model->named_parameters()) add_tensor(crc, p.key(), p.value());
  for (const auto& b : model->named_buffers()) add_tensor(crc, b.key(), b.value());
}

std::string read_model(const std::string& path) {
  const LoadedModel m = load_model(path);
  Crc32 crc;
  crc.update(m.config.to_json().dump()).update(m.provenance.dump());
  add_model(crc, m.model);
  return crc.hex();
}

std::string read_checkpoint_file(const std::string& path) {
  const LoadedCheckpoint c = read_checkpoint(path, torch::kCPU);
  Crc32 crc;
  crc.update(c.meta.dump());
  add_model(crc, c.model);
  for (std::int64_t i = 0; i < c.covariance_blocks; ++i) add_tensor(crc, "P", c.covariance_block(i));
  return crc.hex();
}

}  // namespace

void write_seeds(const std::string& source_dir, const std::string& dir) {
  fs::create_directories(dir);
  const fs::path d(dir);
  for (const std::string name : {"si_cp2k.h5", "water_cp2k.h5"})
    fs::copy_file(fs::path(source_dir) / "data" / name, d / name, fs::copy_options::overwrite_existing);
  const System si = select_frames(read_systems((d / "si_cp2k.h5").string()).at(0), {0, 1, 2});
  const System water = select_frames(read_systems((d / "water_cp2k.h5").string()).at(0), {0, 1});
  write_npy_system((d / "si3").string(), si);
  write_hdf5_systems((d / "small.h5").string(), {si, water}, {"si3", "water/w2"});
  write_extxyz((d / "si3.xyz").string(), si);
  write_extxyz((d / "water2.xyz").string(), water);
  write_dump((d / "water2.dump").string(), water, false);
  write_dump((d / "water2_elements.dump").string(), water, true);

  // Two inputs on the npy folder: deepkf's layout, and DeePMD-kit's (no optimizer section, Adam's loss and
  // learning-rate sections as DeePMD-kit writes them).
  json input = {{"model", small_model()},
                {"optimizer", {{"type", "LKF"}, {"kf_blocksize", 128}, {"p0", 10.0}}},
                {"training",
                 {{"training_data", {{"systems", {(d / "si3").string()}}, {"batch_size", 1}}},
                  {"validation_data", {{"systems", {(d / "si3").string()}}, {"batch_size", 1}}},
                  {"numb_steps", 2},
                  {"seed", 1},
                  {"disp_freq", 1},
                  {"save_freq", 1}}}};
  std::ofstream((d / "input.json").string()) << input.dump(2);
  json deepmd = {
      {"model", small_model()},
      {"learning_rate", {{"type", "exp"}, {"start_lr", 1e-3}, {"stop_lr", 1e-8}, {"decay_steps", 50}}},
      {"loss",
       {{"type", "ener"},
        {"start_pref_e", 0.02},
        {"limit_pref_e", 1},
        {"start_pref_f", 1000},
        {"limit_pref_f", 1},
        {"start_pref_v", 0},
        {"limit_pref_v", 0}}},
      {"training",
       {{"training_data", {{"systems", {(d / "si3").string()}}, {"batch_size", "auto"}}},
        {"numb_steps", 100},
        {"seed", 1},
        {"disp_file", "lcurve.out"},
        {"save_ckpt", "model.ckpt"}}}};
  std::ofstream((d / "deepmd_input.json").string()) << deepmd.dump(2);

  // A model file and a checkpoint from a real (short) run on that input.
  TrainerOptions options;
  options.output_dir = (d / "run").string();
  options.progress = 0;
  fs::create_directories(options.output_dir);
  Trainer trainer(TrainConfig::from_file((d / "input.json").string()), options, make_serial_communicator());
  const TrainResult r = trainer.run();
  fs::rename(r.model, d / "model.pt");
  fs::rename(r.checkpoint, d / "model.ckpt");
  fs::remove_all(d / "run");
}

std::vector<Reader> readers(const std::string& seed_dir) {
  const fs::path d(seed_dir);
  const auto in = [&](const std::string& name) { return (d / name).string(); };
  return {
      {"npy", {in("si3")}, "bytes", false, read_data},
      {"hdf5", {in("si_cp2k.h5"), in("water_cp2k.h5"), in("small.h5")}, "bytes", false, read_data},
      {"xyz", {in("si3.xyz"), in("water2.xyz")}, "text", false, read_data},
      {"dump", {in("water2.dump"), in("water2_elements.dump")}, "text", false, read_dump},
      {"input",
       {in("input.json"), in("deepmd_input.json")},
       "json",
       false,
       [](const std::string& p) { return plan_training_run(p, 1, 1); }},
      {"model", {in("model.pt")}, "bytes", true, read_model},
      {"checkpoint", {in("model.ckpt")}, "bytes", true, read_checkpoint_file},
  };
}

}  // namespace deepkf::fuzz
