// A linear SNAP fit on the same training frames deepkf trains on, as a baseline for the errors of
// bench/accuracy/first_epoch.sh: bispectrum components from LAMMPS's `compute snap` (ML-SNAP package), one
// coefficient vector per element plus a per-atom energy constant, fitted to per-atom energies and force
// components by weighted linear least squares; validation errors on the held-out frames of the split that
// `deepkf train` makes with the same validation_fraction and seed (frame mode).
//
//   bench_snap_baseline LMP DATA VALIDATION_FRACTION WORKDIR [SEED...]
//
// LMP: an lmp built with ML-SNAP (scripts/build_lammps.sh builds one). DATA: a periodic dataset path as
// `deepkf train` reads it. Environment: SNAP_RCUT (A, default 5.0, first_epoch.sh's model), SNAP_TWOJMAX
// (default "6 8"), SNAP_ENERGY_WEIGHTS (weights of the per-atom energy rows, eV, against force rows, eV/A,
// default "1 10 100"). Prints one markdown row per seed, twojmax and weight.
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/core/AtomicFile.hpp"
#include "src/data/Dataset.hpp"
#include "src/data/DatasetSplit.hpp"
#include "src/learn/Elements.hpp"
#include "src/learn/LammpsInput.hpp"

namespace fs = std::filesystem;
using namespace deepkf;

namespace {

struct FrameRef {
  std::size_t system;
  std::int64_t frame;
};

std::vector<double> numbers_from_env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  std::istringstream in(v != nullptr ? v : fallback);
  std::vector<double> out;
  for (double x; in >> x;) out.push_back(x);
  if (out.empty()) throw std::runtime_error(std::string(name) + " holds no number");
  return out;
}

// The global array of `compute snap` as fix ave/time (mode vector) writes it: rows 1 + 3N + 6, columns
// ntypes x K + 1.
std::vector<std::vector<double>> read_snap_array(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no output " + path + " (see lammps.log in its folder)");
  std::string line;
  std::int64_t rows = -1;
  std::vector<std::vector<double>> out;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    if (rows < 0) {  // "timestep nrows"
      std::int64_t step = 0;
      fields >> step >> rows;
      continue;
    }
    std::int64_t index = 0;
    fields >> index;
    std::vector<double> row;
    for (double x; fields >> x;) row.push_back(x);
    out.push_back(std::move(row));
    if (static_cast<std::int64_t>(out.size()) == rows) break;
  }
  if (rows < 0 || static_cast<std::int64_t>(out.size()) != rows)
    throw std::runtime_error("truncated snap array in " + path);
  return out;
}

// Runs lmp once over every frame: frame_<i>.data -> snap_<twojmax>_<i>.txt (i from 1). One compute snap per
// LAMMPS instance (it adds its own pressure compute), so one run per twojmax.
void compute_bispectra(const std::string& lmp, const fs::path& dir, std::size_t nframes, double rcut,
                       int twojmax, std::size_t ntypes) {
  std::string radii, weights;
  for (std::size_t t = 0; t < ntypes; ++t) radii += " 0.5", weights += " 1.0";
  std::ostringstream in;
  // rcutfac x (R_i + R_j) = rcut with R = 0.5; rfac0 and rmin0 at compute snap's usual values; B0 removed.
  in << "variable i loop " << nframes << "\nlabel next\nclear\nunits metal\natom_style atomic\n"
     << "atom_modify map array\nboundary p p p\nread_data frame_${i}.data\n"
     << "pair_style zero " << rcut << "\npair_coeff * *\n"
     << "compute s all snap " << rcut << " 0.99363 " << twojmax << radii << weights
     << " rmin0 0.0 bzeroflag 1\n"
     << "fix s all ave/time 1 1 1 c_s[*] file snap_" << twojmax << "_${i}.txt mode vector\n"
     << "run 0\nnext i\njump SELF next\n";
  const std::string script = "snap_" + std::to_string(twojmax) + ".in";
  write_text_atomically((dir / script).string(), in.str());
  const std::string cmd = "cd '" + dir.string() + "' && '" + lmp + "' -in " + script +
                          " -log lammps.log -screen none > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("lmp failed: " + cmd + " (see lammps.log)");
}

struct LinearRows {
  std::vector<double> a;  // rows x columns, row-major
  std::vector<double> y;
  std::vector<char> is_energy;  // per row: a per-atom energy row (else a force component)
  std::int64_t columns = 0;
};

// One frame's rows: the per-atom energy [n_t / N, sum_i B_i(t) / N] and 3N force rows [0, -dB/dx] (compute
// snap's force rows already carry the minus sign), the DFT force turned into LAMMPS's orientation.
void append_frame(LinearRows& rows, const std::vector<std::vector<double>>& snap, const System& s,
                  std::int64_t frame, std::size_t ntypes) {
  const std::int64_t n = s.natoms;
  const std::size_t k = (snap.at(0).size() - 1) / ntypes;
  rows.columns = static_cast<std::int64_t>(ntypes * (k + 1));
  auto push = [&](const std::vector<double>& b, double scale, double y, bool energy, bool constant) {
    for (std::size_t t = 0; t < ntypes; ++t) {
      double count = 0.0;
      if (constant)
        for (int type : s.atom_types) count += type == static_cast<int>(t) ? 1.0 : 0.0;
      rows.a.push_back(count * scale);
      for (std::size_t c = 0; c < k; ++c) rows.a.push_back(b[t * k + c] * scale);
    }
    rows.y.push_back(y);
    rows.is_energy.push_back(energy ? 1 : 0);
  };
  push(snap[0], 1.0 / static_cast<double>(n), s.energy.at(static_cast<std::size_t>(frame)) / n, true, true);
  const auto r = lammps_rotation(s.box.data() + 9 * frame, s.source);
  for (std::int64_t i = 0; i < n; ++i) {
    const double* f = s.force.data() + 3 * (frame * n + i);
    for (int d = 0; d < 3; ++d) {
      const double* axis = r.data() + 3 * d;
      push(snap.at(static_cast<std::size_t>(1 + 3 * i + d)), 1.0,
           f[0] * axis[0] + f[1] * axis[1] + f[2] * axis[2], false, false);
    }
  }
}

torch::Tensor matrix(const LinearRows& r) {
  return torch::from_blob(const_cast<double*>(r.a.data()), {static_cast<std::int64_t>(r.y.size()), r.columns},
                          torch::kFloat64);
}

// rmse of the per-atom energy (meV/atom) and of the force components (eV/A) of `beta` on `rows`.
std::array<double, 2> errors(const LinearRows& rows, const torch::Tensor& beta) {
  const auto pred = torch::matmul(matrix(rows), beta);
  const auto* p = pred.data_ptr<double>();
  double se = 0, sf = 0;
  std::int64_t ne = 0, nf = 0;
  for (std::size_t i = 0; i < rows.y.size(); ++i) {
    const double d = p[i] - rows.y[i];
    if (rows.is_energy[i]) {
      se += d * d;
      ++ne;
    } else {
      sf += d * d;
      ++nf;
    }
  }
  return {1000.0 * std::sqrt(se / static_cast<double>(ne)), std::sqrt(sf / static_cast<double>(nf))};
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_snap_baseline LMP DATA VALIDATION_FRACTION WORKDIR [SEED...]\n");
    return 2;
  }
  // lmp runs in WORKDIR: a relative path to it is made absolute first (a bare name is looked up in PATH).
  const std::string lmp =
      std::string(argv[1]).find('/') == std::string::npos ? argv[1] : fs::absolute(argv[1]).string();
  const Dataset data = Dataset::load({argv[2]});
  const double fraction = std::stod(argv[3]);
  const fs::path work = fs::absolute(argv[4]);
  std::vector<std::uint64_t> seeds;
  for (int i = 5; i < argc; ++i) seeds.push_back(std::stoull(argv[i]));
  if (seeds.empty()) seeds.push_back(1);
  const double rcut = numbers_from_env("SNAP_RCUT", "5.0").at(0);
  const auto twojmax = numbers_from_env("SNAP_TWOJMAX", "6 8");
  const auto weights = numbers_from_env("SNAP_ENERGY_WEIGHTS", "1 10 100");
  const std::size_t ntypes = data.type_map.size();

  // Every frame once, bispectra for every twojmax in one lmp run.
  std::vector<FrameRef> frames;
  std::vector<double> masses;
  for (const auto& e : data.type_map) masses.push_back(atomic_mass(e));
  fs::create_directories(work);
  for (std::size_t s = 0; s < data.systems.size(); ++s)
    for (std::int64_t f = 0; f < data.systems[s].nframes; ++f) {
      write_text_atomically((work / ("frame_" + std::to_string(frames.size() + 1) + ".data")).string(),
                            lammps_data_text(data.systems[s], f, masses));
      frames.push_back({s, f});
    }
  for (double k : twojmax) compute_bispectra(lmp, work, frames.size(), rcut, static_cast<int>(k), ntypes);

  std::printf(
      "| seed | twojmax | coefficients | energy weight | train rmse_e (meV/atom) | train rmse_f (eV/A) "
      "| val rmse_e (meV/atom) | val rmse_f (eV/A) |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::vector<std::int64_t> nframes;
  for (const auto& s : data.systems) nframes.push_back(s.nframes);
  // Each frame's array per twojmax, read once for every seed's split.
  std::vector<std::vector<std::vector<std::vector<double>>>> arrays(twojmax.size());
  for (std::size_t j = 0; j < twojmax.size(); ++j)
    for (std::size_t i = 0; i < frames.size(); ++i)
      arrays[j].push_back(read_snap_array((work / ("snap_" + std::to_string(static_cast<int>(twojmax[j])) +
                                                   "_" + std::to_string(i + 1) + ".txt"))
                                              .string()));
  for (const auto seed : seeds) {
    const SplitIndices split = split_frames(nframes, fraction, SplitMode::kFrame, seed);
    std::vector<char> held_out(frames.size(), 0);
    for (const auto& part : split.validation)
      for (const auto f : part.frames)
        for (std::size_t i = 0; i < frames.size(); ++i)
          if (frames[i].system == static_cast<std::size_t>(part.system) && frames[i].frame == f)
            held_out[i] = 1;
    for (std::size_t j = 0; j < twojmax.size(); ++j) {
      const double k = twojmax[j];
      LinearRows train, valid;
      for (std::size_t i = 0; i < frames.size(); ++i)
        append_frame(held_out[i] ? valid : train, arrays[j][i], data.systems[frames[i].system],
                     frames[i].frame, ntypes);
      for (double w : weights) {
        // Weighted least squares: the energy rows scaled by w; gelsd (SVD) for the rank-deficient case.
        auto scale = torch::ones({static_cast<std::int64_t>(train.y.size()), 1}, torch::kFloat64);
        for (std::size_t i = 0; i < train.y.size(); ++i)
          if (train.is_energy[i]) scale[static_cast<std::int64_t>(i)][0] = w;
        const auto y =
            torch::from_blob(train.y.data(), {static_cast<std::int64_t>(train.y.size()), 1}, torch::kFloat64);
        const auto beta = std::get<0>(torch::linalg_lstsq(matrix(train) * scale, y * scale, c10::nullopt,
                                                          std::string("gelsd")))
                              .squeeze(1);
        const auto t = errors(train, beta);
        const auto v = errors(valid, beta);
        std::printf("| %llu | %d | %lld | %g | %.1f | %.3f | %.1f | %.3f |\n",
                    static_cast<unsigned long long>(seed), static_cast<int>(k),
                    static_cast<long long>(train.columns), w, t[0], t[1], v[0], v[1]);
      }
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_snap_baseline: %s\n", e.what());
  return 1;
}
