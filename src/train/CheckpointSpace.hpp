#pragma once
// Whether the disk can hold a run's checkpoints, checked before the first step: an RLEKF checkpoint holds
// the whole covariance (19.2 GiB for DeePMD-kit's water model at kf_blocksize 5120), and each one is written
// to a temporary file beside the last and renamed over it, so from the second write on two exist at once.
// A full disk found at the end of a long run would cost the run; found at the start, it costs nothing.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

// Bytes of a checkpoint: the packed covariance blocks (n_i (n_i + 1) / 2 values of `block_dtype`), four
// copies of the weights (the model and the optimizer's vectors) and 1 MiB for the rest.
std::int64_t checkpoint_bytes(const std::vector<std::int64_t>& block_sizes, torch::ScalarType block_dtype,
                              std::int64_t weight_bytes);

// Checkpoints written from step `step` to `numb_steps`: one every save_freq steps and one at the end.
std::int64_t checkpoint_writes(std::int64_t step, std::int64_t numb_steps, std::int64_t save_freq);

// Throws ResourceError naming `path`'s folder, the sizes and what to change, when its free space (or
// DEEPKF_AVAILABLE_DISK, bytes or "20GiB", for tests) is below what the writes need: one checkpoint's
// bytes when a file is already at `path` or only one write is due, two otherwise.
void check_checkpoint_space(const std::string& path, std::int64_t bytes, std::int64_t writes);

}  // namespace deepkf
