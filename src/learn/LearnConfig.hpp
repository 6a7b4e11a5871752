#pragma once
// The online-learning input (loop.json, docs/online-learning.md) in typed form. Keys are checked like the
// training input's: an unknown or misspelt key is an error naming it and the nearest known key; a bad value
// is an error naming the file, the key and the value. Relative paths are taken from loop.json's folder.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace deepkf {

// Program names as given (a path or a name looked up in PATH, src/learn/ExternalProgram.hpp).
struct LearnTrainConfig {
  std::string input;            // training input (model, optimizer, initial data); absolute path
  int models = 4;               // ensemble members (different seeds)
  std::int64_t init_steps = 0;  // steps of the first training
  std::int64_t steps = 0;       // steps each later iteration adds, continuing the same state
  int new_frame_repeat = 4;     // visits per epoch of the frames labelled by the last iteration
  // A continued member whose training force RMSE comes out above reset_factor times its previous round's has
  // diverged: it is trained again from its previous round's weights with a fresh covariance; 0: never.
  double reset_factor = 3.0;
  std::vector<std::string> init_models;  // start the first training from these model files (one per member)
  std::string deepkf;                    // "" : the running deepkf
  std::string mpirun = "mpirun";         // used when ranks > 1
  int ranks = 1;                         // MPI ranks per training
  int jobs = 1;                          // members trained at once
};

// A start structure: frames of any data path deepkf reads (hdf5, npy folder, extended XYZ), repeated.
struct StartStructure {
  std::string path;                       // absolute, may hold "#group"
  std::vector<std::int64_t> frames{0};    // frames of each system under path
  std::array<int, 3> replicate{1, 1, 1};  // LAMMPS replicate
};

struct ExploreConfig {
  std::string lmp = "lmp";  // a LAMMPS with the PLUGIN package
  std::string plugin;       // libdeepkf_lammps.so; "" : next to the running deepkf's build
  std::string mpirun = "mpirun";
  int ranks = 1;  // MPI ranks per LAMMPS run
  int jobs = 1;   // LAMMPS runs at once
  std::vector<StartStructure> structures;
  std::string ensemble = "nvt";          // "nvt" or "npt"
  std::vector<double> temperatures;      // K
  std::vector<double> pressures;         // bar (npt only)
  std::string barostat = "iso";          // npt coupling: "iso", "aniso" or "tri"
  std::vector<std::int64_t> steps;       // MD steps of iteration i: steps[min(i, size - 1)]
  double timestep = 0.001;               // ps
  int dump_freq = 10;                    // steps between dumped (and scored) frames
  double thermostat_damping = 0.1;       // ps
  double barostat_damping = 1.0;         // ps
  std::map<std::string, double> masses;  // element -> g/mol, for elements the built-in table lacks
};

struct SelectConfig {
  // The score: "model_deviation", the max force deviation of the ensemble (eV/A); "kalman_sigma", the max
  // predicted force sigma of the first member's RLEKF covariance (eV/A when calibrated); or "random", no
  // score: every explored frame is a candidate (window -inf, inf), frames are drawn at random (a baseline).
  std::string method = "model_deviation";
  // kalman_sigma: atoms scored per frame (3 backward passes each), drawn at random; 0: every atom.
  std::int64_t force_atoms = 32;
  double trust_lo = 0.0;  // candidates: trust_lo <= score < trust_hi
  double trust_hi = 0.0;
  bool relative = false;      // trust_lo, trust_hi are multiples of the median score of the first exploration
  int max_frames = 10;        // frames labelled per iteration at most
  double min_distance = 0.0;  // A: a candidate this close (RMS displacement) to a chosen one is skipped
};

struct LabelConfig {
  std::string cp2k = "cp2k.psmp";
  std::string mpirun = "mpirun";
  std::string template_path;  // CP2K input with {{cell}}, {{coord}}, {{kinds}}, {{kpoints}} (absolute)
  std::map<std::string, std::array<std::string, 2>> kinds;  // element -> basis set, potential
  double kpoint_spacing = 0.0;  // 1/A, for {{kpoints}}: n_i = max(1, ceil(|b_i| / spacing)), |b_i| = 1/w_i
  int ranks = 1;                // MPI ranks per CP2K run
  int threads = 1;              // OMP_NUM_THREADS per rank
  int jobs = 1;                 // CP2K runs at once
  double timeout_s = 0.0;       // > 0: a run taking longer is stopped and recorded as failed
};

struct LearnConfig {
  std::string file;      // loop.json, for messages
  std::string base_dir;  // its folder
  int iterations = 1;    // labelling rounds; a last round trains, explores and scores without labelling
  double stop_candidate_fraction = 0.0;  // stop when the candidate fraction falls below this
  std::uint64_t seed = 1;
  LearnTrainConfig train;
  ExploreConfig explore;
  SelectConfig select;
  LabelConfig label;
  std::vector<std::string> test_data;  // held-out frames (absolute paths): errors per iteration

  // Reads and checks `path`; ConfigError naming the file, key and value.
  static LearnConfig from_file(const std::string& path);
};

}  // namespace deepkf
