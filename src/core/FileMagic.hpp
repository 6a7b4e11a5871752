#pragma once
// The first bytes that identify deepkf's own binary files, shared by the code that writes them and the
// code that recognises them elsewhere (a checkpoint given where a model file is expected).

namespace deepkf {

// A training checkpoint of format 2 and later (src/train/Checkpoint.hpp) starts with these 8 bytes.
inline constexpr char kCheckpointMagic[8] = {'D', 'E', 'E', 'P', 'K', 'F', 'C', 'K'};

}  // namespace deepkf
