// The joint update's innovation matrix against values worked out by hand: the block terms summed with
// lambda on the diagonal per block, symmetrised, and the noise by share on the diagonal.
#include "optim/InnovationMatrix.hpp"
#include "tests/support/Catch.hpp"

TEST_CASE("the innovation matrix sums blocks in order, symmetrises and takes the noise by share",
          "[optim][kalman][joint]") {
  // Two blocks of m = 2: [[1, 2], [2.2, 3]] and [[0.5, 0.1], [0.3, 4]], lambda 0.5.
  const std::vector<double> terms = {1, 2, 2.2, 3, 0.5, 0.1, 0.3, 4};
  // Sum [[1.5, 2.1], [2.5, 7]], plus 2 x 0.5 on the diagonal, off-diagonals averaged to 2.3; q = A_kk - L
  // lambda = (1.5, 7).
  const auto fixed = deepkf::innovation_matrix(terms, 2, 2, 0.5, {});
  CHECK(fixed.A == std::vector<double>{2.5, 2.3, 2.3, 8.0});
  CHECK(fixed.q == std::vector<double>{1.5, 7.0});
  // A share of 0.25 for measurement 1: A_11 = q_1 / 0.25 = 28; measurement 0 (share 0) keeps L lambda.
  const auto shared = deepkf::innovation_matrix(terms, 2, 2, 0.5, {0.0, 0.25});
  CHECK(shared.A == std::vector<double>{2.5, 2.3, 2.3, 28.0});
  CHECK(shared.q == fixed.q);
  // A measurement without gradient (q = 0) keeps L lambda whatever its share.
  const auto flat = deepkf::innovation_matrix({0, 0, 0, 2}, 1, 2, 1.0, {0.5, 0.5});
  // A = [[1, 0], [0, 3]], q = (0, 2): measurement 0 keeps 1, measurement 1 gets 2 / 0.5 = 4.
  CHECK(flat.A == std::vector<double>{1.0, 0.0, 0.0, 4.0});
  // As caps: measurement 1's noise is the larger of L lambda (A_11 = 8, share 7/8) and q_1 (1/s - 1): a cap
  // of 0.25 binds (A_11 = 28), a cap of 0.9 does not (7 / 0.9 < 8); measurement 0 (cap 0) keeps L lambda.
  CHECK(deepkf::innovation_matrix(terms, 2, 2, 0.5, {0.0, 0.25}, true).A == shared.A);
  CHECK(deepkf::innovation_matrix(terms, 2, 2, 0.5, {0.0, 0.9}, true).A == fixed.A);
}
