#pragma once
// LibTorch's intra-op threads for a command's --threads option.
#include <torch/torch.h>

#include "src/core/Cores.hpp"

namespace deepkf::cli {

// `requested` threads, or one per core this process may run on when it is 0 or less.
inline void set_torch_threads(int requested) { torch::set_num_threads(requested > 0 ? requested : usable_cores()); }

}  // namespace deepkf::cli
