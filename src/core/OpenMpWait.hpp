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

// LibTorch's matrix products call OpenBLAS, whose pthreads build (Debian's libopenblas0-pthread, the default)
// keeps a second pool of one thread per core beside libgomp's. After each product its idle threads spin in
// sched_yield for a while, on the cores the OpenMP threads of the next element-wise operation need: in
// training steps of the water reference model on 2 cores, about 23% of the CPU samples were that spinning
// (perf, 2026-11-28), and Adam's steps ran 7 to 13% faster with the products on one thread
// (docs/benchmarks.md, "BLAS threads"). When neither OPENBLAS_NUM_THREADS nor GOTO_NUM_THREADS is set and
// the OpenBLAS in the process is the pthreads build, this makes its products run on the calling thread; an
// OpenMP or serial OpenBLAS, or another BLAS, is left as it is. Call before the first product (calling it
// again is harmless).
void single_threaded_blas();

// What the products run on, for logs: "OpenBLAS (pthreads) 1 thread", "OpenBLAS (OpenMP) 2 threads", or
// "BLAS threads not known" when the BLAS is not OpenBLAS.
std::string blas_threads_text();

// How idle OpenMP threads wait in this process, for logs: "GOMP_SPINCOUNT 1000", "OMP_WAIT_POLICY passive",
// or "libgomp's default spinning" when neither is set.
std::string openmp_wait_text();

}  // namespace deepkf
