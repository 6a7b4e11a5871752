#include "src/core/MpiCommunicator.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "src/core/Error.hpp"

namespace deepkf {
namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    throw ParallelError(std::string("mpi ") + what +
                        " failed: " + std::string(text, static_cast<std::size_t>(len)));
  }
}

// MPI counts are int: split large reductions into chunks below INT_MAX elements.
template <typename T>
void allreduce_chunked(T* data, std::size_t n, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  constexpr std::size_t chunk = static_cast<std::size_t>(INT_MAX / 2);
  for (std::size_t begin = 0; begin < n; begin += chunk) {
    const int count = static_cast<int>(std::min(chunk, n - begin));
    check(MPI_Allreduce(MPI_IN_PLACE, data + begin, count, type, op, comm), "allreduce");
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) throw ParallelError("mpi is not initialised");
  check(MPI_Comm_dup(comm, &comm_), "comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // Node-local rank: ranks that share memory form one node.
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
}

MpiCommunicator::~MpiCommunicator() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::allreduce_sum(double* data, std::size_t n) {
  allreduce_chunked(data, n, MPI_DOUBLE, MPI_SUM, comm_);
}
void MpiCommunicator::allreduce_sum(float* data, std::size_t n) {
  allreduce_chunked(data, n, MPI_FLOAT, MPI_SUM, comm_);
}
void MpiCommunicator::allreduce_sum(std::int64_t* data, std::size_t n) {
  allreduce_chunked(data, n, MPI_INT64_T, MPI_SUM, comm_);
}
void MpiCommunicator::allreduce_max(double* data, std::size_t n) {
  allreduce_chunked(data, n, MPI_DOUBLE, MPI_MAX, comm_);
}

void MpiCommunicator::allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts) {
  if (counts.size() != static_cast<std::size_t>(size_)) {
    throw ParallelError("allgatherv got " + std::to_string(counts.size()) + " counts for " +
                        std::to_string(size_) + " ranks");
  }
  // Byte counts as MPI_BYTE; displacements are prefix sums. Both must fit in int.
  std::vector<int> icounts(counts.size()), displs(counts.size());
  std::size_t offset = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > static_cast<std::size_t>(INT_MAX) || offset > static_cast<std::size_t>(INT_MAX)) {
      throw ParallelError("allgatherv of more than 2 GiB is not supported");
    }
    icounts[r] = static_cast<int>(counts[r]);
    displs[r] = static_cast<int>(offset);
    offset += counts[r];
  }
  auto* out = static_cast<char*>(recv);
  const bool in_place = send == out + displs[rank_];
  check(MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, icounts[rank_], MPI_BYTE, recv, icounts.data(),
                       displs.data(), MPI_BYTE, comm_),
        "allgatherv");
}

void MpiCommunicator::broadcast(void* data, std::size_t nbytes, int root) {
  auto* bytes = static_cast<char*>(data);
  constexpr std::size_t chunk = static_cast<std::size_t>(INT_MAX / 2);
  for (std::size_t begin = 0; begin < nbytes; begin += chunk) {
    const int count = static_cast<int>(std::min(chunk, nbytes - begin));
    check(MPI_Bcast(bytes + begin, count, MPI_BYTE, root, comm_), "bcast");
  }
}

void MpiCommunicator::transfer(void* data, std::size_t nbytes, int from, int to) {
  if (from == to || (rank_ != from && rank_ != to)) return;
  auto* bytes = static_cast<char*>(data);
  constexpr std::size_t chunk = static_cast<std::size_t>(INT_MAX / 2);
  for (std::size_t begin = 0; begin < nbytes; begin += chunk) {
    const int count = static_cast<int>(std::min(chunk, nbytes - begin));
    if (rank_ == from) {
      check(MPI_Send(bytes + begin, count, MPI_BYTE, to, 0, comm_), "send");
    } else {
      check(MPI_Recv(bytes + begin, count, MPI_BYTE, from, 0, comm_, MPI_STATUS_IGNORE), "recv");
    }
  }
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_), "barrier"); }

bool MpiCommunicator::any(bool local) {
  int flag = local ? 1 : 0;
  check(MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_LOR, comm_), "allreduce");
  return flag != 0;
}

}  // namespace deepkf
