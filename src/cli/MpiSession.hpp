#pragma once
// Commands that run under mpirun (train, uncertainty): every rank runs the command; a rank-local error ends
// the whole job with its message (MPI_Abort), never a hang.
#include <functional>
#include <memory>

#include "src/core/Communicator.hpp"

namespace deepkf::cli {

// Initialises MPI (if needed), runs body with the world communicator, finalises MPI and returns body's
// exit status. An exception from body on a job of several ranks prints "deepkf: error on rank R: ..." and
// aborts the job; on one rank it is rethrown after MPI_Finalize (main prints it).
int run_with_mpi(const std::function<int(std::shared_ptr<Communicator>)>& body);

}  // namespace deepkf::cli
