#include <cuda_runtime_api.h>

#include "optim/DeviceMemory.hpp"

namespace deepkf {

std::int64_t cuda_free_memory(int device) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return -1;
  if (cudaSetDevice(device) != cudaSuccess) return -1;
  std::size_t free = 0, total = 0;
  const bool ok = cudaMemGetInfo(&free, &total) == cudaSuccess;
  cudaSetDevice(previous);
  return ok ? static_cast<std::int64_t>(free) : -1;
}

}  // namespace deepkf
