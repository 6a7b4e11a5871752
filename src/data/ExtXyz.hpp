#pragma once
// Extended XYZ as ASE writes it. Per frame: a line with the atom count, a comment line of key=value pairs
// (values may be quoted), then one line per atom whose columns follow the Properties spec
// (name:type:ncols triples, type S/R/I/L; default species:S:1:pos:R:3). Used keys (case-insensitive):
// Lattice="ax ay az bx by bz cx cy cz" (A), Properties, energy (eV), stress (ASE sign and units, eV/A^3:
// virial = -stress * volume; 9 numbers or 6 in Voigt order xx yy zz yz xz xy), virial (9 numbers, eV),
// pbc="T T T" (default: T T T with a Lattice, F F F without). Columns: species, pos (A), forces or force
// (eV/A); other keys and columns (free_energy, ...) are ignored. The labels may also carry the names of
// MACE's data sets (REF_energy, REF_forces, REF_stress, REF_virial) or of the libAtoms GAP data sets
// (DFT_energy, DFT_force(s), DFT_virial, DFT_stress, any case); the plain names come first where a frame has
// several.
#include <string>
#include <vector>

#include "src/data/System.hpp"

namespace deepkf {

// Reads every frame of an extended XYZ file. Frames with the same species sequence and periodicity form
// one system (in order of first appearance), whose type map lists its species in order of first
// appearance. A system's source is "path:FORMULA" (e.g. "md.xyz:H2O1"); when two systems share a formula
// (another atom order or periodicity) the later ones get "_nopbc" and/or "_K" (K = system index) appended.
// Throws DataError naming the file and line for a malformed count or comment line, a missing column, a
// non-numeric or non-finite value, a missing energy, a bad Lattice, partial periodicity, or forces/virials
// present in only some frames of a system.
std::vector<System> read_extxyz(const std::string& path);

}  // namespace deepkf
