#pragma once
// The learning curve file (lcurve.out): one line per display step with the validation and training RMSEs,
// the optimizer's status value (lambda or lr), the training wall time and the time inside the training steps,
// under a commented header.
#include <cstdint>
#include <fstream>
#include <string>

#include "src/eval/ErrorMetrics.hpp"

namespace deepkf {

class LearningCurve {
 public:
  // A new file at `path` with the header (restart_step < 0), or, on a restart from a checkpoint at step
  // restart_step, the existing file without its rows after that step (written by a run that went on past
  // its last checkpoint: the restart redoes those steps), so that every step appears once and in order.
  // The cut is atomic (the file is rewritten under a temporary name and renamed). Virial columns when
  // `virial`; `status_name` heads the status column. A resumed file written before the step_s column keeps
  // its columns. Throws Error when it cannot read or write.
  LearningCurve(const std::string& path, std::int64_t restart_step, bool virial,
                const std::string& status_name);
  // One line, flushed: energies and virials per atom (eV/atom), forces in eV/A.
  void add(std::int64_t step, const ErrorMetrics& validation, const ErrorMetrics& training, double status,
           double wall_seconds, double step_seconds);

 private:
  std::ofstream out_;
  bool virial_;
  bool step_column_ = true;
};

}  // namespace deepkf
