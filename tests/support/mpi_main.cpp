// Catch2 main for tests that run under mpiexec: every rank runs the same test cases.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include "tests/support/Catch.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Catch::Session session;
  int status = session.applyCommandLine(argc, argv);
  if (status == 0) status = session.run();
  // A failure on any rank fails the test on every rank, so mpiexec reports it whichever rank saw it.
  int failed = status != 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
