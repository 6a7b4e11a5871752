#pragma once
// What pair_style deepkf keeps behind its LAMMPS-facing class: the models, their device and the packed atoms
// of the current step; everything that needs LibTorch (PairDeepkf.hpp keeps LibTorch out of LAMMPS's view).
#include <c10/util/Exception.h>
#include <torch/types.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "lammps_plugin/PairDeepkf.hpp"
#include "src/core/Error.hpp"
#include "src/eval/Potential.hpp"

namespace LAMMPS_NS {

// Runs `body` (deepkf and LibTorch calls only, never LAMMPS's error handler) and returns the message of a
// deepkf::Error, c10::Error or other std::exception it threw, or an empty string. The caller hands the
// message to error->one / error->all, so each failure is translated exactly once.
template <typename F>
std::string guarded(F&& body) {
  try {
    body();
  } catch (const deepkf::Error& e) {
    return e.what();
  } catch (const c10::Error& e) {
    return std::string("libtorch: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// Models, device and per-step scratch: everything that needs LibTorch.
struct PairDeepkf::Impl {
  struct Model {
    deepkf::Potential potential;
    std::vector<int> type_of;  // LAMMPS type (1-based) -> model type index, -1 = NULL (other style)
    const std::string& path() const { return potential.path(); }
    const deepkf::ModelConfig& config() const { return potential.config(); }
  };

  // One model's output for the packed atoms (npacked of them, ncentre centres first), float64 on the CPU.
  using Output = deepkf::PotentialResult;

  std::vector<Model> models;
  torch::Device device{torch::kCPU};

  // Packed atoms of the current step: the centres (the list's ilist) first, then every other local or ghost
  // atom of a mapped type. packed_of: LAMMPS index -> packed index (-1: not packed).
  std::vector<int> packed_of;
  std::vector<int> lammps_of;
  std::vector<double> x;             // npacked x 3 (A)
  std::vector<std::int64_t> offset;  // ncentre + 1
  std::vector<std::int64_t> neigh;   // candidate neighbours (packed indices)
  std::int64_t ncentre = 0;

  // Model-deviation scratch: forces of every model in LAMMPS order, nall x nmodels x 3.
  std::vector<double> ensemble_force;

  // The driving model is compressed and some step put neighbours beyond its tables (said once).
  bool warned_beyond_table = false;

  // Packs the list's centres (ilist[0, inum)) and every other local or ghost atom of a mapped type, with
  // their coordinates, and translates the neighbour list's candidates to packed indices.
  void pack(int inum, const int* ilist, const int* numneigh, int** firstneigh, int nall, const int* type,
            double** x_lammps);
  // Evaluates model m on the packed atoms; need_atom_virial adds the per-atom virial.
  Output evaluate(std::size_t m, const int* lammps_type, bool need_atom_virial);
};

}  // namespace LAMMPS_NS
