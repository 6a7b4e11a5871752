#include "src/core/OpenMpWait.hpp"

#include <unistd.h>

#include <cstdlib>

namespace deepkf {

void bound_openmp_spinning(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kGompSpinCount, 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc): the variable is set for the programs this one starts, and it runs on.
}

std::string openmp_wait_text() {
  std::string text;
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) text = std::string("OMP_WAIT_POLICY ") + policy;
  if (const char* spins = std::getenv("GOMP_SPINCOUNT"))
    text += (text.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT ") + spins;
  return text.empty() ? "libgomp's default spinning" : text;
}

}  // namespace deepkf
