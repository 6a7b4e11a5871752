// The distributed Kalman filter (blocks owned by ranks) against a single process: same weights, same P,
// about half of P per rank on 2 ranks, every block streamed to rank 0 in order, and a state saved by either
// restores under the other.
#include <mpi.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "optim/KalmanFilter.hpp"
#include "src/core/Error.hpp"
#include "src/core/MpiCommunicator.hpp"
#include "tests/optim/OptimTestSupport.hpp"
#include "tests/support/Catch.hpp"
#include "tests/support/TestData.hpp"

using namespace deepkf;
using namespace deepkf::test;

namespace {

// Several blocks of different sizes: 40x30 -> 1200 = 4 x 256 + 176; 30 + 300 -> 30, 256 + 44 ...
const std::vector<std::vector<std::int64_t>> kShapes = {{40, 30}, {30}, {300}, {7, 3}, {64, 8}, {5}};

// A directory every rank agrees on (made by rank 0).
std::string shared_temp_dir(Communicator& comm, const std::string& tag) {
  char path[512] = {0};
  if (comm.is_root()) std::snprintf(path, sizeof path, "%s", make_temp_dir(tag).c_str());
  comm.broadcast(path, sizeof path, 0);
  return path;
}

}  // namespace

TEST_CASE("distributed kalman filter equals the single-process one", "[optim][kalman][mpi]") {
  auto comm = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
  const int nranks = comm->size();
  for (const auto& [p_dtype, p_cap, radius] :
       {std::tuple{torch::kFloat64, 0.0, 0.0}, std::tuple{torch::kFloat32, 0.0, 0.0},
        std::tuple{torch::kFloat64, 1.2, 0.0}, std::tuple{torch::kFloat64, 0.0, 1e-3}}) {
    INFO("covariance dtype " << c10::toString(p_dtype) << ", p_cap " << p_cap << ", trust_radius " << radius
                             << ", rank " << comm->rank() << " of " << nranks);
    KalmanOptions options;
    options.blocksize = 256;
    options.p_dtype = p_dtype;
    // The trust radius's Y^T Y is summed per block in block order too.
    options.trust_radius = radius;
    // With the cap, a fast forgetting schedule brings the unconstrained directions to it within the run;
    // each block decides alone, so the ranks' blocks are capped as the single process caps them.
    if (p_cap > 0.0) {
      options.p_cap = p_cap;
      options.lambda0 = 0.9;
    }

    auto serial_params = make_params(kShapes, 17);
    auto dist_params = clone_all(serial_params);
    KalmanFilter serial(serial_params, options);  // every rank runs the whole filter alone
    KalmanFilter dist(dist_params, options, comm);
    REQUIRE(dist.layout().num_blocks() >= 6);

    // Each rank holds only its own blocks: about 1/R of P, and all of it over the ranks.
    std::int64_t bytes = dist.covariance_bytes();
    std::int64_t total = bytes;
    comm->allreduce_sum(&total, 1);
    CHECK(total == serial.covariance_bytes());
    CHECK(static_cast<double>(bytes) > 0.35 * static_cast<double>(total) * 2 / nranks);
    CHECK(static_cast<double>(bytes) < 0.65 * static_cast<double>(total) * 2 / nranks);
    CHECK_THROWS_AS(dist.covariance(dist.first_block() > 0 ? 0 : dist.layout().num_blocks() - 1), OptimError);

    // Scalar updates and joint updates of 3 and 4 measurements (the last one joint, so its rank-m update
    // is pending when the state is saved below).
    for (std::int64_t k = 0; k < 12; ++k) {
      if (k % 3 == 0) {
        const auto grads = make_grads(serial_params, k, 0.3);
        serial.update(make_innovation(k), grads);
        dist.update(make_innovation(k), grads);
        continue;
      }
      std::vector<double> e;
      std::vector<std::vector<torch::Tensor>> grads;
      for (std::int64_t j = 0; j < 2 + k % 3; ++j) {
        grads.push_back(make_grads(serial_params, 100 * k + j, j == 0 ? 0.3 : 0.03));
        e.push_back(make_innovation(100 * k + j));
      }
      serial.update_joint(e, grads);
      dist.update_joint(e, grads);
    }
    // The per-block terms of a (and of A) are summed in block order on every rank: bit-identical results.
    for (std::size_t t = 0; t < kShapes.size(); ++t) {
      INFO("parameter " << t);
      CHECK(torch::equal(dist_params[t], serial_params[t]));
    }
    for (std::int64_t i = dist.first_block(); i < dist.end_block(); ++i) {
      CHECK(torch::equal(dist.covariance(i), serial.covariance(i)));
    }
    CHECK(dist.lambda() == serial.lambda());
    // The diagnostics sum this rank's |dw|^2 and tr(P_i) over the ranks: the serial filter's values.
    const auto d_dist = dist.take_diagnostics();
    const auto d_serial = serial.take_diagnostics();
    CHECK(d_dist.updates == 12);
    CHECK(d_dist.capped == d_serial.capped);
    if (p_cap > 0.0) CHECK(d_dist.capped > 0);
    CHECK(d_dist.damped == d_serial.damped);
    if (radius > 0.0) CHECK(d_dist.damped > 0);
    CHECK(d_dist.mean_nis == d_serial.mean_nis);
    CHECK(d_dist.rms_step == Approx(d_serial.rms_step).epsilon(1e-12));
    CHECK(d_dist.mean_p_diag == Approx(d_serial.mean_p_diag).epsilon(1e-12));

    // Predicted variances h^T P h with sharded blocks (the last update still pending): the per-block terms
    // are summed in block order, so the values are the single process's, bit for bit.
    {
      std::vector<torch::Tensor> rows;
      for (std::int64_t k = 0; k < 9; ++k)
        rows.push_back(flatten_by_definition(make_grads(serial_params, 50 + k)));
      const auto H = torch::stack(rows);
      CHECK(dist.quadratic_forms(H) == serial.quadratic_forms(H));
    }

    // Weights agree across ranks (the allgather rebuilt them everywhere).
    auto w = flatten_by_definition(dist_params);
    auto w0 = w.clone();
    comm->broadcast(w0.data_ptr(), static_cast<std::size_t>(w0.numel()) * sizeof(double), 0);
    CHECK(torch::equal(w, w0));

    // Streaming the covariance to rank 0 (what checkpoints use): every block once, in order, as the
    // single-process filter has it; the other ranks' sinks are not called.
    {
      std::int64_t next = 0;
      dist.stream_covariance([&](std::int64_t i, const torch::Tensor& block) {
        CHECK(i == next++);
        CHECK(block.is_cpu());
        CHECK(torch::equal(block, serial.packed_covariance(i)));
      });
      CHECK(next == (comm->is_root() ? dist.layout().num_blocks() : 0));
    }

    // Distributed save (blocks gathered to rank 0) restores into a single process, and a single-process
    // save restores into the distributed filter: both continue like the uninterrupted serial run.
    const std::string dir = shared_temp_dir(*comm, "kalman-mpi");
    {
      torch::serialize::OutputArchive out;
      dist.save(out);
      if (comm->is_root()) out.save_to(dir + "/dist.pt");
      torch::serialize::OutputArchive serial_out;
      serial.save(serial_out);
      if (comm->is_root()) serial_out.save_to(dir + "/serial.pt");
      comm->barrier();
    }
    auto from_dist_params = clone_all(serial_params);
    KalmanFilter from_dist(from_dist_params, options);
    auto from_serial_params = clone_all(serial_params);
    KalmanFilter from_serial(from_serial_params, options, comm);
    {
      torch::serialize::InputArchive in;
      in.load_from(dir + "/dist.pt");
      from_dist.load(in);
      torch::serialize::InputArchive in2;
      in2.load_from(dir + "/serial.pt");
      from_serial.load(in2);
    }
    for (std::int64_t k = 12; k < 16; ++k) {
      const auto grads = make_grads(serial_params, k, 0.3);
      serial.update(make_innovation(k), grads);
      from_dist.update(make_innovation(k), grads);
      from_serial.update(make_innovation(k), grads);
    }
    for (std::size_t t = 0; t < kShapes.size(); ++t) {
      CHECK(torch::equal(from_dist_params[t], serial_params[t]));
      CHECK(torch::equal(from_serial_params[t], serial_params[t]));
    }
    for (std::int64_t i = 0; i < serial.layout().num_blocks(); ++i) {
      CHECK(torch::equal(from_dist.covariance(i), serial.covariance(i)));
    }
    CHECK(from_serial.steps() == 16);
    comm->barrier();
  }
}
