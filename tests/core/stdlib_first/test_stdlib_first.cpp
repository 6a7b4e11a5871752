// Linked after the objects against a library that exports a wrong std::filesystem::file_size (as LibTorch
// is linked, and as PyTorch's wheels export such copies): the call must still reach libstdc++, which
// cmake/DeepkfStdlibFirst.cmake puts first in the program's list of shared libraries.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

extern "C" int deepkf_interposer_loaded();

int main() {
  if (deepkf_interposer_loaded() != 1) return 2;
  const auto path = std::filesystem::temp_directory_path() / "deepkf-stdlib-first.bin";
  std::ofstream(path, std::ios::binary) << "12345";
  const std::uintmax_t size = std::filesystem::file_size(path);
  std::filesystem::remove(path);
  if (size != 5) {
    std::fprintf(stderr,
                 "std::filesystem::file_size of a 5-byte file gave %ju: the call reached another library's "
                 "exported copy instead of libstdc++ (link order of cmake/DeepkfStdlibFirst.cmake)\n",
                 static_cast<std::uintmax_t>(size));
    return 1;
  }
  std::printf("std::filesystem::file_size reached libstdc++ (5 bytes)\n");
  return 0;
}
