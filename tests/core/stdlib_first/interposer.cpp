// A shared library that exports its own std::filesystem::file_size, as PyTorch's wheels export the parts of
// libstdc++ they link statically (weak symbols, like theirs). Its copy gives a wrong size, so a program that
// calls it instead of libstdc++'s shows it.
#include <cstdint>
#include <filesystem>

namespace std::filesystem {
__attribute__((weak, visibility("default"))) std::uintmax_t file_size(const path& /*p*/) {
  return 4242424242u;
}
}  // namespace std::filesystem

// Something the program needs from this library, so that the linker keeps it even with --as-needed.
extern "C" __attribute__((visibility("default"))) int deepkf_interposer_loaded() { return 1; }
