#pragma once
// Communicator over an MPI communicator. main() creates it from MPI_COMM_WORLD; everything below main()
// only sees the Communicator interface.
#include <mpi.h>

#include "src/core/Communicator.hpp"

namespace deepkf {

class MpiCommunicator final : public Communicator {
 public:
  // Duplicates `comm` so that our messages never mix with the caller's. MPI must be initialised.
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  void allreduce_sum(double* data, std::size_t n) override;
  void allreduce_sum(float* data, std::size_t n) override;
  void allreduce_sum(std::int64_t* data, std::size_t n) override;
  void allreduce_max(double* data, std::size_t n) override;
  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts) override;
  void broadcast(void* data, std::size_t nbytes, int root) override;
  void transfer(void* data, std::size_t nbytes, int from, int to) override;
  void barrier() override;
  bool any(bool local) override;

  MPI_Comm handle() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace deepkf
