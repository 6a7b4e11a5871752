#pragma once
// The run's log: on rank 0, the terminal (stderr) and output_dir/train.log, written line by line so that it
// is current after a kill -9; other ranks log nowhere. Creates the output directory. Collective.
#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "src/core/Communicator.hpp"

namespace deepkf {

// `append`: continue an existing train.log (a restart). Error when the output directory cannot be made.
std::shared_ptr<spdlog::logger> open_training_log(Communicator& comm, const std::string& output_dir,
                                                  bool append);

}  // namespace deepkf
