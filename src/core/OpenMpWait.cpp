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

}  // namespace deepkf
