#pragma once
// Why DeePMD-kit's batch_size forms "mixed:N" and "filter:N" are refused (src/train/TrainConfig.cpp).
#include <string>

namespace deepkf {

// The reason, for form "mixed" or "filter".
inline std::string unsupported_batch_rule(const std::string& form) {
  if (form == "mixed")
    // DeePMD-kit (deepmd/utils/data_system.py, get_batch_mixed; TensorFlow backend, type-embedding
    // descriptors only) draws each of the N frames of a batch from any system and pads them with virtual
    // atoms into one batch. A deepkf batch, and so each Kalman update, holds the frames of one system.
    return "DeePMD-kit's \"mixed:N\" puts frames of different systems (other atom counts and types, padded "
           "with virtual atoms) into one batch, which deepkf's batches (the frames of one system) cannot "
           "hold: use N for N frames of one system per batch, \"auto:N\" or \"max:N\"; type_mix data "
           "(real_atom_types.npy) is read as the ordinary systems of its frames";
  return "DeePMD-kit's \"" + form + ":N\" is not supported by deepkf: use \"auto:N\" or \"max:N\"";
}

}  // namespace deepkf
