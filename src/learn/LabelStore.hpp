#pragma once
// The labelled frames of an online-learning run in one deepmd/hdf5 file (labels.h5 in the loop's folder):
// a group per iteration and kind of frame, "iter.003/Si8" (frames holding the same atoms in the same order;
// "Si8_2" for a second kind with the same formula), with energies, forces and virials in DeePMD's units and a
// "provenance" text attribute per group: a JSON list, one entry per frame (exploration run, step, score,
// CP2K folder). The file is rewritten atomically from the loop's records after each label stage, so it never
// holds a frame twice and a stopped loop never leaves it torn.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

struct LabelledFrame {
  System frame;               // one frame with energy, force and virial
  nlohmann::json provenance;  // where it came from
};

// "iter.003": the group holding iteration 3's frames.
std::string iteration_group(int iteration);

// Writes `path` with by_iteration[i].second (the frames of iteration by_iteration[i].first); iterations
// without frames get no group. Throws DataError naming the file when it cannot be written.
void write_label_file(const std::string& path,
                      const std::vector<std::pair<int, std::vector<LabelledFrame>>>& by_iteration);

}  // namespace deepkf
