#pragma once
// Free memory of a CUDA device (cudaMemGetInfo), for the memory plan. Built only when LibTorch has CUDA.
#include <cstdint>

namespace deepkf {

#ifdef DEEPKF_WITH_CUDA
// Bytes free on `device` now, or -1 when the runtime cannot say.
std::int64_t cuda_free_memory(int device);
#endif

}  // namespace deepkf
