#include "tests/support/TestData.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace fs = std::filesystem;

namespace deepkf::test {

std::string shared_datasets_dir() {
  if (const char* env = std::getenv("DEEPKF_SHARED_DATASETS"); env != nullptr && *env != '\0') return env;
  return (fs::path(DEEPKF_SOURCE_DIR) / ".." / "shared" / "datasets").lexically_normal().string();
}

std::string require_shared_dataset(const std::string& relative) {
  const fs::path path = fs::path(shared_datasets_dir()) / relative;
  if (!fs::exists(path)) {
    std::fprintf(
        stderr,
        "skipped: dataset %s not found (tests read the real datasets from ../shared/datasets next to "
        "the checkout, or from $DEEPKF_SHARED_DATASETS)\n",
        path.string().c_str());
    std::fflush(stderr);
    std::_Exit(77);
  }
  return path.string();
}

std::string require_deepmd_kit_file(const std::string& relative) {
  const char* env = std::getenv("DEEPKF_DEEPMD_KIT_DIR");
  const fs::path root =
      env != nullptr && *env != '\0'
          ? fs::path(env)
          : (fs::path(DEEPKF_SOURCE_DIR) / ".." / "shared" / "deepmd-kit").lexically_normal();
  const fs::path path = root / relative;
  const char* why = nullptr;
  if (!fs::exists(path)) why = "not found";
  std::error_code ec;
  // A checkout without git-lfs holds small text pointers where the data should be.
  if (why == nullptr && fs::is_regular_file(path, ec) && fs::file_size(path, ec) < 200 &&
      read_text(path.string()).rfind("version https://git-lfs", 0) == 0)
    why = "a Git LFS pointer, not the data";
  if (why != nullptr) {
    std::fprintf(stderr,
                 "skipped: %s %s (tests read DeePMD-kit's examples from a checkout of "
                 "github.com/deepmodeling/deepmd-kit at $DEEPKF_DEEPMD_KIT_DIR or ../shared/deepmd-kit)\n",
                 path.string().c_str(), why);
    std::fflush(stderr);
    std::_Exit(77);
  }
  return path.string();
}

std::string make_temp_dir(const std::string& tag) {
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("deepkf-test-" + tag + "-" + std::to_string(rd()));
  fs::create_directories(dir);
  return dir.string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace deepkf::test
