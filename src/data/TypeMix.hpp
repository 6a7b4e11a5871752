#pragma once
// DeePMD-kit's type_mix ("mixed type") format of npy folders and deepmd/hdf5 groups (deepmd/utils/data.py;
// written by dpdata's deepmd/npy/mixed): every set holds real_atom_types.npy, nframes x natoms integers
// indexing type_map.raw, each frame's own atom types; -1 marks a virtual atom, padding that is not part of
// the frame (DeePMD-kit's model masks it out). type.raw then gives only the atom count, and type_map.raw is
// required. deepkf's systems share their atoms, so such a folder is read as the ordinary systems its frames
// form: frames with the same real types in the same order are one system, without their virtual atoms.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/data/DeepmdLayout.hpp"
#include "src/data/FrameSource.hpp"

namespace deepkf {

// One set's real_atom_types.npy and its frame count.
struct TypeMixSet {
  std::string where;  // the set, for messages
  std::shared_ptr<const ArraySource> real_types;
  std::int64_t nframes = 0;
};

// The frames of `padded` (the folder as read with type.raw's types, frames in set order) split by the rows
// of `sets`' real_atom_types.npy, as systems named "SOURCE:FORMULA" (system_names) in order of first
// appearance, each frame read from `padded` when asked for. Throws DataError naming the set, frame, atom
// and value for a shape other than nframes x natoms, a non-integer type, a type below -1 or past
// type_map.raw, a frame of virtual atoms only, and (naming the system) when there is no type_map.raw.
std::vector<std::shared_ptr<FrameSource>> split_type_mix(const std::shared_ptr<const FrameSource>& padded,
                                                         const std::vector<TypeMixSet>& sets,
                                                         bool has_type_map);

}  // namespace deepkf
