#pragma once
// The readers fuzz_readers.cpp drives, each as the command line uses it, and the real files it starts from.
#include <functional>
#include <string>
#include <vector>

namespace deepkf::fuzz {

// Writes the seed files into `dir`: copies of the project's data/si_cp2k.h5 and data/water_cp2k.h5, a
// DeePMD npy folder and extended XYZ files of some of their frames, two training inputs on that folder
// (deepkf's layout and DeePMD-kit's), and the model file and checkpoint of a two-step run on it.
void write_seeds(const std::string& source_dir, const std::string& dir);

struct Reader {
  std::string name;
  std::vector<std::string> seeds;  // files, or folders whose files are mutated one at a time
  std::string kind;                // mutations: "bytes", "text" or "json"
  bool content_checked;            // an accepted mutant must read back as its seed (else: silent corruption)
  // Reads a file (or folder) completely, throwing as the command line would; returns a fingerprint of
  // what was read when content_checked.
  std::function<std::string(const std::string&)> read;
};

std::vector<Reader> readers(const std::string& seed_dir);

}  // namespace deepkf::fuzz
