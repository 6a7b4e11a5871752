#pragma once
// The learning curve file (lcurve.out): one line per display step with the validation and training RMSEs,
// the optimizer's status value (lambda or lr) and the training wall time, under a commented header.
#include <cstdint>
#include <fstream>
#include <string>

#include "src/eval/ErrorMetrics.hpp"

namespace deepkf {

class LearningCurve {
 public:
  // Opens `path`: appends when `append` and the file exists (a restart), else starts it with the header.
  // Virial columns when `virial`; `status_name` heads the status column. Throws Error when it cannot write.
  LearningCurve(const std::string& path, bool append, bool virial, const std::string& status_name);
  // One line, flushed: energies and virials per atom (eV/atom), forces in eV/A.
  void add(std::int64_t step, const ErrorMetrics& validation, const ErrorMetrics& training, double status,
           double wall_seconds);

 private:
  std::ofstream out_;
  bool virial_;
};

}  // namespace deepkf
