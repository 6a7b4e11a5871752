#include "src/cli/MpiSession.hpp"

#include <mpi.h>

#include <cstdio>
#include <exception>

#include "src/core/MpiCommunicator.hpp"

namespace deepkf::cli {

int run_with_mpi(const std::function<int(std::shared_ptr<Communicator>)>& body) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    auto comm = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
    const int status = body(comm);
    comm.reset();
    MPI_Finalize();
    return status;
  } catch (const std::exception& e) {
    if (size > 1) {
      std::fprintf(stderr, "deepkf: error on rank %d: %s\n", rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    throw;
  }
}

}  // namespace deepkf::cli
