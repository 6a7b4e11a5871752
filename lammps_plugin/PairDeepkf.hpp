#pragma once
// pair_style deepkf: DeepPot-SE models written by deepkf (model.pt), evaluated with LibTorch inside LAMMPS.
//
//   pair_style deepkf MODEL [MODEL2 ...] [out_freq N] [out_file FILE] [atomic] [relative L] [relative_v L]
//   pair_coeff * * O H          (element names of the model's type_map; NULL for types of other styles)
//
// The plugin also registers it as pair_style deepmd, DeePMD-kit's name, with DeePMD-kit's reading of a bare
// `pair_coeff * *` (LAMMPS type t is the model's type t - 1), so that DeePMD-kit users' input scripts run
// with only the model file changed.
//
// The first model drives the dynamics. With several models, all are evaluated every out_freq steps and the
// force and virial deviation between them is written to out_file (DeePMD-kit's model_devi.out layout).
// Needs a full neighbour list, newton pair on and units metal (eV, Angstrom). LibTorch stays out of this
// header: the models live in PairDeepkf::Impl.
#include <memory>
#include <string>
#include <vector>

#include "pair.h"

namespace deepkf {
struct PotentialResult;  // one model's energy, forces and virials for a step's packed atoms
                         // (src/eval/Potential.hpp)
}  // namespace deepkf

namespace LAMMPS_NS {

class PairDeepkf : public Pair {
 public:
  // style: the name the input uses, "deepkf" or "deepmd" (for messages).
  PairDeepkf(LAMMPS* lammps, std::string style);
  ~PairDeepkf() override;

  void compute(int eflag, int vflag) override;
  void settings(int narg, char** arg) override;
  void coeff(int narg, char** arg) override;
  void init_style() override;
  double init_one(int i, int j) override;

  // Reverse communication of every model's forces on ghost atoms (only on model-deviation steps).
  int pack_reverse_comm(int n, int first, double* buf) override;
  void unpack_reverse_comm(int n, int* send_list, double* buf) override;

  // The model-deviation file's header line (DeePMD-kit's model_devi.out).
  static const char* deviation_header();

 private:
  struct Impl;
  void allocate();
  // settings() is parse -> device and threads -> models -> deviation file.
  // The keywords and model files of the pair_style line (error->all naming a bad one).
  void parse_settings(int narg, char** arg);
  // The GPU of this node-local rank when LibTorch sees one, else the CPU; LibTorch's CPU threads.
  void choose_device_and_threads();
  // Loads every model file onto the device; the cutoff is the largest; one log line per model (rank 0).
  void load_models();
  // With several models, rank 0 opens out_file and writes its header.
  void open_deviation_file();
  // error->one(msg) for a failure seen on this rank only, with the screen and log flushed on the way out:
  // LAMMPS built with exceptions aborts from main() without flushing them, which loses the message when
  // the output goes to a file.
  [[noreturn]] void fail_on_this_rank(const std::string& msg);
  // compute() is pack -> evaluate -> check -> tally (PairDeepkfCompute.cpp). check_prediction stops the run
  // (on this rank) at a non-finite energy or force of model m; tally adds the driving model's forces,
  // energies and virials (global, per atom, centroid) to LAMMPS's arrays as the ev flags ask.
  void check_prediction(const deepkf::PotentialResult& out, std::size_t m);
  void tally(const deepkf::PotentialResult& out, int inum, const int* ilist);
  // Collective: warns once when any rank saw `local` > 0 neighbour slots beyond a compressed model's tables.
  void warn_beyond_table(long long local);
  // Collective, on model-deviation steps: every model's ghost forces to their owners, the deviation of this
  // rank's centres (ilist[0, inum)) and the models' virials (9 per model, this rank's) reduced to rank 0,
  // which writes the row of out_file (PairDeepkfDeviation.cpp).
  void write_deviation(int inum, const int* ilist, const std::vector<double>& model_virials);

  std::string ps() const { return "pair_style " + style_; }  // for messages
  std::string pc() const { return "pair_coeff " + style_; }

  std::string style_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> model_paths_;
  std::vector<std::string> elements_;  // per LAMMPS type (1-based, index 0 unused): element name or "NULL"
  int out_freq_ = 0;
  std::string out_file_ = "model_devi.out";
  bool atomic_ = false;
  bool relative_ = false;
  double relative_level_ = 0.0;
  bool relative_v_ = false;  // the virial deviation divided by |<W>| / N + relative_v_level_
  double relative_v_level_ = 0.0;
  double cutoff_ = 0.0;  // largest model cutoff (A)
  void* out_ = nullptr;  // FILE* of out_file on rank 0
};

}  // namespace LAMMPS_NS
