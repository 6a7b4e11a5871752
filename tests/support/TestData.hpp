#pragma once
// Access to the real DFT datasets in ../shared/datasets (next to the checkout, never copied into it).
// A test that needs them and cannot find them is reported by ctest as skipped, with a message.
#include <filesystem>
#include <string>

namespace deepkf::test {

// Directory of the shared datasets: $DEEPKF_SHARED_DATASETS if set, else <source>/../shared/datasets.
std::string shared_datasets_dir();

// Path of a dataset below shared_datasets_dir(); when it does not exist, prints why and ends the test
// process with the skip code (77) that ctest reports as "skipped".
std::string require_shared_dataset(const std::string& relative);

// Path of a file or folder of a DeePMD-kit source tree (github.com/deepmodeling/deepmd-kit): below
// $DEEPKF_DEEPMD_KIT_DIR if set, else <source>/../shared/deepmd-kit. When it does not exist, or is a Git LFS
// pointer instead of the data, prints why and ends the test process with the skip code (77).
std::string require_deepmd_kit_file(const std::string& relative);

// A fresh empty directory under the system temp dir for one test's files.
std::string make_temp_dir(const std::string& tag);

// The whole content of a file, bytes as they are; "" when it cannot be read.
std::string read_text(const std::string& path);

// Runs f with the current directory set to `dir`, and returns to where it was (also when f throws).
template <typename F>
void in_directory(const std::string& dir, F&& f) {
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  try {
    f();
  } catch (...) {
    std::filesystem::current_path(before);
    throw;
  }
  std::filesystem::current_path(before);
}

}  // namespace deepkf::test
