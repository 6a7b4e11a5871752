#pragma once
// The NumPy .npy format (versions 1.0 to 3.0): a magic string, a header dict describing dtype, order and
// shape, then the raw array. Read and written in one piece (one fread / fwrite).
#include <cstdint>
#include <string>
#include <vector>

namespace deepkf {

// One array from a .npy file, converted to double. `dtype` keeps the file's descriptor (e.g. "<f4").
struct NpyArray {
  std::vector<std::int64_t> shape;  // C order; empty for a 0-d array
  std::vector<double> data;         // product(shape) values, row-major
  std::string dtype;

  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  // Product of the dimensions after the first (1 for 0-d and 1-d arrays).
  std::int64_t cols() const;
};

// Reads a little-endian float32/float64 or int8..int64/uint8..uint64 array in C order. Throws DataError
// naming the file for a missing/short file, a bad header, Fortran order, big-endian or another dtype.
NpyArray read_npy(const std::string& path);

enum class NpyDtype { kFloat32, kFloat64, kInt64 };

// Writes data (product(shape) values, row-major) as a version 1.0 .npy file with the given dtype.
// Throws DataError naming the file when it cannot be written.
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const double* data,
               NpyDtype dtype = NpyDtype::kFloat64);

}  // namespace deepkf
