#include "src/core/Communicator.hpp"
#include "tests/support/Catch.hpp"

TEST_CASE("serial communicator is the identity", "[core]") {
  auto comm = deepkf::make_serial_communicator();
  REQUIRE(comm->size() == 1);
  REQUIRE(comm->rank() == 0);
  double x[2] = {1.5, -2.0};
  comm->allreduce_sum(x, 2);
  REQUIRE(x[0] == 1.5);
  REQUIRE(x[1] == -2.0);
  REQUIRE(comm->sum(3.0) == 3.0);
  REQUIRE(comm->any(true));
  REQUIRE_FALSE(comm->any(false));
  const double send[3] = {1, 2, 3};
  double recv[3] = {0, 0, 0};
  comm->allgatherv(send, recv, {sizeof(send)});
  REQUIRE(recv[2] == 3);
}
