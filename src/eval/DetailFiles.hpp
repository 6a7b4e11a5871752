#pragma once
// The per-frame detail files of DeePMD-kit's `dp test -d PREFIX`, written by `deepkf test -d PREFIX` so that
// scripts written for them (parity plots, error histograms) read ours unchanged:
//   PREFIX.e.out          per frame: data_e pred_e (eV)
//   PREFIX.e_peratom.out  the same divided by the frame's atom count (eV/atom)
//   PREFIX.f.out          per atom: data_fx data_fy data_fz pred_fx pred_fy pred_fz (eV/A)
//   PREFIX.v.out          per frame: the 9 data virial components, then the 9 predicted ones (eV)
//   PREFIX.v_peratom.out  the same divided by the atom count (eV/atom)
// PREFIX's extension, if any, is replaced, as DeePMD-kit does ("out/detail.txt" gives "out/detail.e.out").
// Each system's rows follow a comment line "# SYSTEM: column names"; numbers are written as numpy's savetxt
// writes them (%.18e, one space apart). Within a frame, atoms are listed by type (the model's type order),
// in the data's order within a type, as DeePMD-kit lists them. The force files cover the systems with force
// labels, the virial files those with virial labels; a file no system has data for is not written.
#include <string>
#include <vector>

#include "src/eval/LabelledErrors.hpp"

namespace deepkf {

// Writes the detail files of `result` (each atomically) and returns their paths.
std::vector<std::string> write_detail_files(const LabelledErrors& result, const std::string& prefix);

}  // namespace deepkf
