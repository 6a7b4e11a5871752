#pragma once
// The library's one error hierarchy. Messages are lower-case and quote the offending value and where it
// came from, e.g. "energy.npy in water/data_0/set.000 has 79 rows, coord.npy has 80".
#include <stdexcept>
#include <string>

namespace deepkf {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Bad input file or dataset content.
class DataError : public Error {
 public:
  using Error::Error;
};

// Bad input configuration (input.json keys and values, command-line options).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Model construction, model files, evaluation.
class ModelError : public Error {
 public:
  using Error::Error;
};

// Optimizer state and updates.
class OptimError : public Error {
 public:
  using Error::Error;
};

// Communication between ranks.
class ParallelError : public Error {
 public:
  using Error::Error;
};

// Not enough memory (host or device) for what the input asks; the message gives the need and the options.
class ResourceError : public Error {
 public:
  using Error::Error;
};

// The first non-blank line of a library's message (LibTorch's carry stack frames after it), at most 200
// characters: what a one-line error quotes of a cause.
std::string first_line(const std::string& message);

// x with all 17 significant digits ("%.17g"): a value an error message quotes exactly.
std::string exact_number(double x);

}  // namespace deepkf
