#include "tests/lammps_plugin/LammpsRunner.hpp"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "src/geometry/NeighborList.hpp"
#include "src/model/Batch.hpp"
#include "src/model/ModelFile.hpp"
#include "tests/support/TestData.hpp"

namespace deepkf::test {

namespace {

// A little-endian float32/float64 C-order .npy file: the values and the shape.
std::vector<double> read_npy(const std::string& path, std::vector<std::int64_t>& shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  char magic[8];
  in.read(magic, 8);
  std::uint32_t header_len = 0;
  if (magic[6] == 1) {
    std::uint16_t h = 0;
    in.read(reinterpret_cast<char*>(&h), 2);
    header_len = h;
  } else {
    in.read(reinterpret_cast<char*>(&header_len), 4);
  }
  std::string header(header_len, ' ');
  in.read(header.data(), header_len);
  const bool f4 = header.find("<f4") != std::string::npos;
  if (!f4 && header.find("<f8") == std::string::npos)
    throw std::runtime_error("unsupported dtype in " + path);
  if (header.find("'fortran_order': True") != std::string::npos)
    throw std::runtime_error("fortran order in " + path);
  shape.clear();
  const auto open = header.find('(', header.find("shape"));
  const auto close = header.find(')', open);
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  std::string item;
  std::int64_t count = 1;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    shape.push_back(std::stoll(item));
    count *= shape.back();
  }
  std::vector<double> values(static_cast<std::size_t>(count));
  if (f4) {
    std::vector<float> raw(values.size());
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size() * sizeof(float)));
    for (std::size_t k = 0; k < raw.size(); ++k) values[k] = raw[k];
  } else {
    in.read(reinterpret_cast<char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(double)));
  }
  if (!in) throw std::runtime_error("truncated " + path);
  return values;
}

}  // namespace

Frame water_frame(int index, bool tilt) {
  const auto dir = require_shared_dataset("water/data_0");
  std::vector<std::int64_t> cshape, bshape;
  const auto coord = read_npy(dir + "/set.000/coord.npy", cshape);
  const auto box = read_npy(dir + "/set.000/box.npy", bshape);
  Frame f;
  std::ifstream types(dir + "/type.raw");
  for (int t; types >> t;) f.types.push_back(t);
  const auto n = f.natoms();
  const double lx = box[9 * index], ly = box[9 * index + 4], lz = box[9 * index + 8];
  f.box = {lx, 0, 0, 0, ly, 0, 0, 0, lz};
  if (tilt) f.box = {lx, 0, 0, 1.3, ly, 0, -0.9, 1.1, lz};
  for (std::int64_t i = 0; i < n; ++i) {
    // fractional coordinates in the cubic cell, wrapped into [0, 1), then x = f H
    double s[3];
    const double len[3] = {lx, ly, lz};
    for (int d = 0; d < 3; ++d) {
      s[d] = coord[static_cast<std::size_t>(index * 3 * n + 3 * i + d)] / len[d];
      s[d] -= std::floor(s[d]);
    }
    for (int d = 0; d < 3; ++d)
      f.coord.push_back(s[0] * f.box[d] + s[1] * f.box[3 + d] + s[2] * f.box[6 + d]);
  }
  return f;
}

void write_water_model(const std::string& path, std::int64_t seed, const std::string& descriptor) {
  ModelConfig mc;
  // "se_a_ebd_v2": se_e2_a with a type embedding (strip; DeePMD-kit's se_e2_a_tebd example's [2, 4, 8])
  const bool tebd = descriptor == "se_a_ebd_v2";
  mc.descriptor = tebd ? "se_e2_a" : descriptor;
  if (tebd) {
    mc.type_embedding.neuron = {2, 4, 8};
    mc.tebd_input_mode = "strip";
  }
  mc.type_map = {"O", "H"};
  mc.rcut = 6.0;
  mc.rcut_smth = 0.5;
  mc.sel = {46, 92};
  if (descriptor == "se_e3") {
    // a shorter cutoff: se_e3 evaluates its nets on every pair of neighbours
    mc.rcut = 4.0;
    mc.sel = {16, 32};
  }
  mc.embedding_neuron = {8, 16};
  mc.axis_neuron = 4;
  mc.fitting_neuron = {16, 16};
  mc.seed = seed;
  if (descriptor == "se_atten" || descriptor == "se_atten_v2" || descriptor == "se_atten_v2_0") {
    // the nearest 64 of any type within 4.5 A (the attention's cost grows with sel^2), two attention
    // layers; se_atten: concat without smooth gates, se_atten_v2: strip with them; se_atten_v2_0: strip
    // without attention layers (the form that is compressed)
    mc.descriptor = "se_atten";
    mc.rcut = 4.5;
    mc.sel = {64};
    mc.type_embedding.neuron = {8};
    mc.type_embedding.linear = true;
    mc.attention.layers = descriptor == "se_atten_v2_0" ? 0 : 2;
    mc.attention.width = 16;
    if (descriptor != "se_atten") {
      mc.tebd_input_mode = "strip";
      mc.attention.smooth = true;
      mc.attention.set_davg_zero = false;
    }
  }
  if (descriptor == "se_e3_tebd" || descriptor == "se_e3_tebd_strip") {
    // DeePMD-kit's se_e3_tebd water example's layout, smaller: the nearest 32 of any type within 4 A, the
    // type vectors concatenated to the pair's g; se_e3_tebd_strip: G_t of them as a factor (the form that
    // is compressed)
    mc.descriptor = "se_e3_tebd";
    if (descriptor == "se_e3_tebd_strip") mc.tebd_input_mode = "strip";
    mc.rcut = 4.0;
    mc.sel = {32};
    mc.embedding_neuron = {2, 4, 8};
    mc.type_embedding.neuron = {8};
    mc.type_embedding.linear = true;
    mc.attention.layers = 0;
    mc.attention.smooth = true;
  }
  if (descriptor == "hybrid") {
    // DeePMD-kit's water hybrid example's layout: se_e2_a of rcut 4 beside se_e2_r of rcut 6
    ModelConfig a = mc, r = mc;
    a.descriptor = "se_e2_a";
    a.rcut = 4.0;
    a.sel = {20, 40};
    r.descriptor = "se_e2_r";
    mc.parts = {a, r};
    mc.combine_parts();
  }
  DeepPot model(mc);
  // Statistics of the size seen in water (column 0 ~ s(r) ~ 1/r, columns 1..3 ~ s(r) x/r).
  const auto nnei = mc.statistics_slots();
  auto davg = torch::zeros({2, nnei, 4}, torch::kFloat64);
  auto dstd = torch::ones({2, nnei, 4}, torch::kFloat64);
  davg.select(2, 0)[0].fill_(0.11);
  davg.select(2, 0)[1].fill_(0.14);
  dstd.select(2, 0)[0].fill_(0.19);
  dstd.select(2, 0)[1].fill_(0.23);
  dstd.narrow(2, 1, 3)[0].fill_(0.12);
  dstd.narrow(2, 1, 3)[1].fill_(0.15);
  model->set_statistics(davg, dstd);
  model->set_energy_bias(torch::tensor({-93.5, -187.2}, torch::kFloat64));
  save_model(path, model, nlohmann::json{{"source", "lammps plugin test"}, {"seed", seed}});
}

// The model on the frame through build_neighbor_list with periodic shifts, float64.
Direct direct(const std::string& model_path, const Frame& f) {
  auto loaded = load_model(model_path);
  const auto& mc = loaded.config;
  const auto n = f.natoms();
  const auto in_list = list_types(mc, f.types);
  const auto nl = build_neighbor_list(f.coord.data(), n, in_list.data(), f.box.data(), mc.rcut, mc.sel);
  const auto coord = torch::tensor(f.coord, torch::kFloat64).view({1, n, 3});
  const auto atype =
      torch::tensor(std::vector<int64_t>(f.types.begin(), f.types.end()), torch::kInt64).view({1, n});
  const auto nlist = torch::tensor(nl.index, torch::kInt64).view({1, n, mc.nnei()});
  const auto shift = torch::tensor(nl.shift, torch::kFloat64).view({1, n, mc.nnei(), 3});
  const auto out =
      loaded.model->evaluate(coord, atype, nlist, shift, deepkf::EvalOptions::with_atom_virial());
  const auto vec = [](const torch::Tensor& t) {
    const auto c = t.to(torch::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  Direct d;
  d.energy = out.energy.item<double>();
  d.atom_energy = vec(out.atom_energy);
  d.force = vec(out.force);
  d.virial = vec(out.virial);
  d.atom_virial = vec(out.atom_virial);
  return d;
}

void write_compressed_model(const std::string& from, const std::string& to) {
  auto loaded = load_model(from);
  loaded.model->compress(TableSettings{});
  auto provenance = loaded.provenance;
  provenance["compressed_from"] = from;
  save_model(to, loaded.model, provenance);
}

void write_data_file(const std::string& path, const Frame& frame, const std::vector<double>& masses) {
  std::FILE* fp = std::fopen(path.c_str(), "w");
  if (fp == nullptr) throw std::runtime_error("cannot write " + path);
  const auto& h = frame.box;
  std::fprintf(fp, "deepkf test frame\n\n%lld atoms\n%zu atom types\n\n",
               static_cast<long long>(frame.natoms()), masses.size());
  std::fprintf(fp, "0 %.17g xlo xhi\n0 %.17g ylo yhi\n0 %.17g zlo zhi\n", h[0], h[4], h[8]);
  if (h[3] != 0 || h[6] != 0 || h[7] != 0) std::fprintf(fp, "%.17g %.17g %.17g xy xz yz\n", h[3], h[6], h[7]);
  std::fprintf(fp, "\nMasses\n\n");
  for (std::size_t t = 0; t < masses.size(); ++t) std::fprintf(fp, "%zu %.17g\n", t + 1, masses[t]);
  std::fprintf(fp, "\nAtoms # atomic\n\n");
  for (std::int64_t i = 0; i < frame.natoms(); ++i) {
    std::fprintf(fp, "%lld %d %.17g %.17g %.17g\n", static_cast<long long>(i + 1), frame.types[i] + 1,
                 frame.coord[3 * i], frame.coord[3 * i + 1], frame.coord[3 * i + 2]);
  }
  std::fclose(fp);
}

namespace {

LammpsResult run_lmp(const std::string& dir, const std::string& arguments, int np) {
  std::string cmd = "cd '" + dir + "' && ";
  // Unbound: Open MPI binds each of 1 or 2 ranks to one core, which would squeeze a rank's threads onto it.
  if (np > 1) {
    cmd += "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(DEEPKF_MPIEXEC) +
           " -n " + std::to_string(np) + " --oversubscribe --bind-to none ";
  }
  cmd += std::string(DEEPKF_LMP) + " " + arguments + " -log log.lammps > screen.txt 2>&1";
  LammpsResult r;
  r.status = std::system(cmd.c_str());
  r.output = read_text(dir + "/screen.txt");
  return r;
}

}  // namespace

LammpsResult run_lammps(const std::string& dir, const std::string& input, int np) {
  {
    std::ofstream in(dir + "/in.lmp");
    in << "plugin load " << DEEPKF_PLUGIN << "\n" << input;
  }
  return run_lmp(dir, "-in in.lmp", np);
}

LammpsResult run_lammps_script(const std::string& dir, const std::string& script,
                               const std::vector<std::pair<std::string, std::string>>& vars, int np) {
  std::string arguments = "-in '" + script + "'";
  for (const auto& [name, value] : vars) arguments += " -var " + name + " '" + value + "'";
  return run_lmp(dir, arguments, np);
}

std::vector<std::vector<double>> read_last_dump(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<double>> rows;
  std::string line;
  bool in_atoms = false;
  while (std::getline(in, line)) {
    if (line.rfind("ITEM: ATOMS", 0) == 0) {
      rows.clear();
      in_atoms = true;
      continue;
    }
    if (line.rfind("ITEM:", 0) == 0) {
      in_atoms = false;
      continue;
    }
    if (!in_atoms) continue;
    std::stringstream ss(line);
    std::vector<double> row;
    for (double v; ss >> v;) row.push_back(v);
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::vector<double>> thermo_rows(const std::string& output, int ncolumns) {
  std::vector<std::vector<double>> rows;
  std::stringstream all(output);
  std::string line;
  bool in_run = false;
  while (std::getline(all, line)) {
    if (line.find("Step") != std::string::npos && line.find("Step") < 8) {
      in_run = true;
      continue;
    }
    if (line.rfind("Loop time", 0) == 0) {
      in_run = false;
      continue;
    }
    if (!in_run) continue;
    std::stringstream ss(line);
    std::vector<double> row;
    for (double v; ss >> v;) row.push_back(v);
    if (static_cast<int>(row.size()) == ncolumns) rows.push_back(row);
  }
  return rows;
}

}  // namespace deepkf::test
