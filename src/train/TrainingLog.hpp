#pragma once
// The run's output folder and log. Rank 0 creates the folder, locks it (src/core/FolderLock.hpp: a second
// run into the same folder stops before it writes anything), removes the unfinished files a killed run left
// there, and logs to the terminal (stderr) and FOLDER/train.log, line by line so that the log is current
// after a kill -9; other ranks log nowhere. Collective.
#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "src/core/Communicator.hpp"
#include "src/core/FolderLock.hpp"

namespace deepkf {

struct TrainingOutput {
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<FolderLock> lock;  // rank 0's, held until the run ends
};

// `append`: continue an existing train.log (a restart). Error when the folder cannot be made, ConfigError
// when another run holds it.
TrainingOutput open_training_output(Communicator& comm, const std::string& output_dir, bool append);

// The terminal's sink of a command's log (stderr), showing the lines at or above the console level that the
// command line chose (src/core/ConsoleLevel.hpp, dp's -v).
spdlog::sink_ptr make_console_sink();

}  // namespace deepkf
