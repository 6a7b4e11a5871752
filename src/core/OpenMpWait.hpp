#pragma once
// How long OpenMP's idle threads spin before they sleep. LibTorch's operations and the covariance sweeps run
// on libgomp's thread pool, whose idle threads spin 300,000 times (about a millisecond) at every barrier
// unless told otherwise. A training step runs thousands of small operations, and on machines whose cores
// are shared (hyperthreads, other processes, oversubscribed ranks) the spinning thread takes the time of the
// one doing the work: on 2 vCPUs a small model's RLEKF step took 0.52 s at the default and 0.39 s with 1,000
// spins, and 1.7 to 2.9 s against 0.43 s while another job ran (docs/benchmarks.md, "OpenMP spinning").
#include <string>

namespace deepkf {

constexpr const char* kGompSpinCount = "1000";

// When the environment sets neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT, sets GOMP_SPINCOUNT to
// kGompSpinCount and re-executes the program with the same arguments (libgomp reads its settings once, when
// it is loaded, before main). Returns when there was nothing to do or the re-execution failed. Call first in
// main, before any thread or MPI starts.
void bound_openmp_spinning(char** argv);

// How idle OpenMP threads wait in this process, for logs: "GOMP_SPINCOUNT 1000", "OMP_WAIT_POLICY passive",
// or "libgomp's default spinning" when neither is set.
std::string openmp_wait_text();

}  // namespace deepkf
