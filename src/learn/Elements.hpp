#pragma once
// Atomic masses for LAMMPS's `mass` command, by element symbol.
#include <map>
#include <string>

namespace deepkf {

// The standard atomic weight (g/mol, IUPAC conventional values) of elements H to Rn, or the value in
// `given` when it names the element (given first). Throws ConfigError asking for explore.masses when the
// element is in neither.
double atomic_mass(const std::string& element, const std::map<std::string, double>& given = {});

}  // namespace deepkf
