#pragma once
// Prediction errors accumulated as sums, so that they can be added over batches and over ranks:
// energy per atom (E - E_ref)/N, every force component, and virial components per atom (W - W_ref)/N.
// These are the numbers of DeePMD-kit's lcurve.out and `dp test` (RMSE and MAE).
#include <cmath>
#include <cstdint>
#include <vector>

namespace deepkf {

struct ModelOutput;
struct Batch;
struct System;
struct PotentialResult;

struct ErrorMetrics {
  double e_sq = 0, e_abs = 0;
  std::int64_t e_count = 0;  // frames
  double f_sq = 0, f_abs = 0;
  std::int64_t f_count = 0;  // force components
  double v_sq = 0, v_abs = 0;
  std::int64_t v_count = 0;  // virial components

  // Adds the errors of one evaluated batch (out.energy: B, out.force: B x natoms x 3, out.virial: B x 9).
  void add(const ModelOutput& out, const Batch& batch);
  // Adds the errors of frames `frames` of `labels`, predicted in that order in `pred` (float64, against the
  // labels as stored); the labels the system lacks add nothing.
  void add(const System& labels, const std::vector<std::int64_t>& frames, const PotentialResult& pred);
  void merge(const ErrorMetrics& other);
  // For an allreduce: the sums as doubles, and back.
  std::vector<double> pack() const;
  void unpack(const std::vector<double>& values);

  double rmse_e() const;  // eV/atom
  double rmse_f() const;  // eV/A
  double rmse_v() const;  // eV/atom
  double mae_e() const;
  double mae_f() const;
  double mae_v() const;
  bool has_force() const { return f_count > 0; }
  bool has_virial() const { return v_count > 0; }
  // Whether every sum is finite (a non-finite prediction makes its sum nan or inf).
  bool finite() const { return std::isfinite(e_sq) && std::isfinite(f_sq) && std::isfinite(v_sq); }
};

}  // namespace deepkf
