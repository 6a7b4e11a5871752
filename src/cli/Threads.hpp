#pragma once
// LibTorch's intra-op threads for a command's --threads option.
#include <torch/torch.h>

#include <algorithm>
#include <thread>

namespace deepkf::cli {

// `requested` threads, or one per core when it is 0 or less.
inline void set_torch_threads(int requested) {
  torch::set_num_threads(requested > 0 ? requested
                                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace deepkf::cli
