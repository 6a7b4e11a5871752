#include "src/core/OpenMpWait.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace deepkf {

void bound_openmp_spinning(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kGompSpinCount, 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc): the variable is set for the programs this one starts, and it runs on.
}

namespace {

// OpenBLAS's own functions, looked up in the process (LibTorch links it; nothing to link here).
template <typename F>
F openblas_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// openblas_get_parallel(): 0 serial, 1 pthreads, 2 OpenMP; -1 when OpenBLAS is not loaded.
int openblas_parallel() {
  const auto get = openblas_function<int (*)()>("openblas_get_parallel");
  return get ? get() : -1;
}

}  // namespace

void single_threaded_blas() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || std::getenv("GOTO_NUM_THREADS") != nullptr) return;
  if (openblas_parallel() != 1) return;
  if (const auto set = openblas_function<void (*)(int)>("openblas_set_num_threads")) set(1);
}

std::string blas_threads_text() {
  const int parallel = openblas_parallel();
  const auto count = openblas_function<int (*)()>("openblas_get_num_threads");
  if (parallel < 0 || !count) return "BLAS threads not known";
  const int n = count();
  const char* kind = parallel == 1 ? "pthreads" : parallel == 2 ? "OpenMP" : "serial";
  return "OpenBLAS (" + std::string(kind) + ") " + std::to_string(n) + (n == 1 ? " thread" : " threads");
}

std::string openmp_wait_text() {
  std::string text;
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) text = std::string("OMP_WAIT_POLICY ") + policy;
  if (const char* spins = std::getenv("GOMP_SPINCOUNT"))
    text += (text.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT ") + spins;
  return text.empty() ? "libgomp's default spinning" : text;
}

}  // namespace deepkf
