#pragma once
// Collective failure handling: work that may fail on some ranks only (file I/O, root-only writes) ends the
// run on every rank, with the failing rank's message, instead of leaving the others waiting.
#include <cstdint>
#include <exception>
#include <string>

#include "src/core/Communicator.hpp"
#include "src/core/Error.hpp"

namespace deepkf {

// Runs f, then agrees over all ranks whether it failed anywhere; if so every rank throws: a failing rank its
// own error, the others a ParallelError with the lowest failing rank's message. Collective; f itself must
// not communicate.
template <typename F>
void together(Communicator& comm, F&& f) {
  std::exception_ptr error;
  std::string what;
  try {
    f();
  } catch (const std::exception& e) {
    error = std::current_exception();
    what = e.what();
  }
  if (comm.size() == 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
  // The lowest failing rank r, as max(size - r) (0: none failed).
  double code = error ? static_cast<double>(comm.size() - comm.rank()) : 0.0;
  comm.allreduce_max(&code, 1);
  if (code == 0.0) return;
  // Every rank takes part in sending the failing rank's message, then the failing ranks rethrow their own.
  const int failed = comm.size() - static_cast<int>(code);
  std::string message = what;
  std::uint64_t length = message.size();
  comm.broadcast(&length, sizeof length, failed);
  message.resize(length);
  comm.broadcast(message.data(), length, failed);
  if (error) std::rethrow_exception(error);
  throw ParallelError("rank " + std::to_string(failed) + " failed: " + message);
}

}  // namespace deepkf
