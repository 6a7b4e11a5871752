#pragma once
// Words and numbers of text data files (extended XYZ, LAMMPS dumps), with errors naming where they are.
#include <string>
#include <vector>

namespace deepkf {

// The whitespace-separated words of s.
std::vector<std::string> split_words(const std::string& s);

// s as a finite number; DataError "WHERE: WHAT 'S' is not a number" or "WHERE: WHAT is non-finite (S)".
double parse_number(const std::string& s, const std::string& where, const std::string& what);

}  // namespace deepkf
