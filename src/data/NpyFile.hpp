#pragma once
// The NumPy .npy format (versions 1.0 to 3.0): a magic string, a header dict describing dtype, order and
// shape, then the raw array. Written in one piece; read whole or as a range of rows (the header gives the
// offset of each row, so a rank of a data-parallel job reads only the frames it needs).
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

// The header of a .npy file: what read_npy_rows needs to find any row.
struct NpyHeader {
  std::string path;
  std::vector<std::int64_t> shape;  // C order; empty for a 0-d array
  std::string dtype;                // descriptor as stored, e.g. "<f4"
  char kind = 'f';                  // 'f', 'i' or 'u'
  int itemsize = 8;                 // bytes per value
  std::int64_t data_offset = 0;     // bytes before the first value

  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::int64_t cols() const;  // product of the dimensions after the first
};

// Parses and checks the header (same errors as read_npy, including a file too short for its shape).
NpyHeader read_npy_header(const std::string& path);

// Reads rows [first, first + count) (cols() values each, converted to double) into out. Throws DataError
// naming the file when the rows are out of range or cannot be read.
void read_npy_rows(const NpyHeader& header, std::int64_t first, std::int64_t count, double* out);

// Reads a little-endian float32/float64 or int8..int64/uint8..uint64 array in C order. Throws DataError
// naming the file for a missing/short file, a bad header, Fortran order, big-endian or another dtype.
NpyArray read_npy(const std::string& path);

enum class NpyDtype { kFloat32, kFloat64, kInt64 };

// Writes data (product(shape) values, row-major) as a version 1.0 .npy file with the given dtype.
// Throws DataError naming the file when it cannot be written.
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const double* data,
               NpyDtype dtype = NpyDtype::kFloat64);

}  // namespace deepkf
