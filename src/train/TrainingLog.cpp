#include "src/train/TrainingLog.hpp"

#include <fmt/ranges.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <filesystem>
#include <vector>

#include "src/core/AtomicFile.hpp"
#include "src/core/ConsoleLevel.hpp"
#include "src/core/Error.hpp"
#include "src/core/Together.hpp"

namespace deepkf {

TrainingOutput open_training_output(Communicator& comm, const std::string& output_dir, bool append) {
  namespace fs = std::filesystem;
  // Only the root writes files: the output directory and train.log are its own.
  TrainingOutput out;
  std::vector<spdlog::sink_ptr> sinks;
  std::vector<std::string> unfinished;
  together(comm, [&] {
    if (comm.rank() != 0) return;
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    if (ec || !fs::is_directory(output_dir)) {
      throw Error("cannot create the output directory " + output_dir + ": " +
                  (ec ? ec.message() : std::string("a file of that name is in the way")));
    }
    out.lock = std::make_unique<FolderLock>(output_dir, "-o");
    unfinished = remove_unfinished_files(output_dir);
    sinks.push_back(make_console_sink());
    sinks.push_back(
        std::make_shared<spdlog::sinks::basic_file_sink_mt>((fs::path(output_dir) / "train.log").string(),
                                                            /*truncate=*/!append));
  });
  auto log = std::make_shared<spdlog::logger>("deepkf", sinks.begin(), sinks.end());
  log->set_pattern("[%Y-%m-%d %H:%M:%S] %v");
  log->set_level(spdlog::level::info);
  // Line by line, so that train.log holds everything up to a kill -9 or an out-of-memory kill.
  log->flush_on(spdlog::level::info);
  if (!unfinished.empty()) {
    log->info("removed {} unfinished file(s) of a run that was killed while writing: {}", unfinished.size(),
              fmt::join(unfinished, ", "));
  }
  out.log = log;
  return out;
}

spdlog::sink_ptr make_console_sink() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  switch (console_level()) {
    case ConsoleLevel::error:
      sink->set_level(spdlog::level::err);
      break;
    case ConsoleLevel::warning:
      sink->set_level(spdlog::level::warn);
      break;
    case ConsoleLevel::info:
    case ConsoleLevel::debug:
      sink->set_level(spdlog::level::trace);
      break;
  }
  return sink;
}

}  // namespace deepkf
