#include <mpi.h>

#include <cstdint>
#include <vector>

#include "src/core/MpiCommunicator.hpp"
#include "tests/support/Catch.hpp"

TEST_CASE("mpi communicator reduces, gathers and agrees on errors", "[core][mpi]") {
  deepkf::MpiCommunicator comm(MPI_COMM_WORLD);
  const int r = comm.rank();
  const int n = comm.size();
  REQUIRE(n >= 1);
  REQUIRE(comm.local_rank() >= 0);

  std::vector<double> x = {1.0 + r, 2.0 * r};
  comm.allreduce_sum(x.data(), x.size());
  // sum_r (1 + r) = n + n(n-1)/2; sum_r 2r = n(n-1)
  CHECK(x[0] == Approx(n + n * (n - 1) / 2.0));
  CHECK(x[1] == Approx(n * (n - 1)));

  std::int64_t k = r + 1;
  comm.allreduce_sum(&k, 1);
  CHECK(k == n * (n + 1) / 2);

  double m = r;
  comm.allreduce_max(&m, 1);
  CHECK(m == n - 1);

  // Rank r contributes r + 1 doubles of value r.
  std::vector<std::size_t> counts;
  std::size_t total = 0;
  for (int q = 0; q < n; ++q) {
    counts.push_back(sizeof(double) * static_cast<std::size_t>(q + 1));
    total += static_cast<std::size_t>(q + 1);
  }
  std::vector<double> mine(static_cast<std::size_t>(r + 1), static_cast<double>(r));
  std::vector<double> all(total, -1.0);
  comm.allgatherv(mine.data(), all.data(), counts);
  std::size_t pos = 0;
  for (int q = 0; q < n; ++q) {
    for (int j = 0; j <= q; ++j) CHECK(all[pos++] == q);
  }

  double b = r == 0 ? 42.0 : 0.0;
  comm.broadcast(&b, sizeof(b), 0);
  CHECK(b == 42.0);

  CHECK(comm.any(r == n - 1));
  CHECK_FALSE(comm.any(false));
}
