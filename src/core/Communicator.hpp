#pragma once
// Communication between the ranks of a data-parallel job. Code below main() talks to a Communicator that
// it is given and never reaches for MPI_COMM_WORLD itself; a single process uses SerialCommunicator.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace deepkf {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank within the node (selects the GPU on multi-GPU nodes).
  virtual int local_rank() const = 0;
  // Ranks on this rank's node (sharing its host memory), this one included.
  virtual int local_size() const = 0;

  // In-place elementwise sum over all ranks of n values.
  virtual void allreduce_sum(double* data, std::size_t n) = 0;
  virtual void allreduce_sum(float* data, std::size_t n) = 0;
  virtual void allreduce_sum(std::int64_t* data, std::size_t n) = 0;
  // In-place maximum over ranks.
  virtual void allreduce_max(double* data, std::size_t n) = 0;
  // Gather variable-length byte blocks: rank r contributes counts[r] bytes, written to recv at offset
  // sum(counts[0..r)). send may alias its own slot in recv.
  virtual void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts) = 0;
  virtual void broadcast(void* data, std::size_t nbytes, int root) = 0;
  // Point to point: rank `from` sends nbytes of data to rank `to`, which receives them into data. Only the
  // two ranks take part (others may call it and return at once); from == to does nothing.
  virtual void transfer(void* data, std::size_t nbytes, int from, int to) = 0;
  virtual void barrier() = 0;
  // True on every rank when `local` is true on any rank: lets a rank-local failure end the whole job.
  virtual bool any(bool local) = 0;

  double sum(double x) {
    allreduce_sum(&x, 1);
    return x;
  }
  bool is_root() const { return rank() == 0; }
};

class SerialCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  void allreduce_sum(double*, std::size_t) override {}
  void allreduce_sum(float*, std::size_t) override {}
  void allreduce_sum(std::int64_t*, std::size_t) override {}
  void allreduce_max(double*, std::size_t) override {}
  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts) override;
  void broadcast(void*, std::size_t, int) override {}
  void transfer(void*, std::size_t, int, int) override {}
  void barrier() override {}
  bool any(bool local) override { return local; }
};

std::shared_ptr<Communicator> make_serial_communicator();

}  // namespace deepkf
