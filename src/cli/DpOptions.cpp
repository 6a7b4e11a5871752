#include "src/cli/DpOptions.hpp"

#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "src/cli/ConsoleCopy.hpp"
#include "src/core/ConsoleLevel.hpp"

namespace deepkf::cli {
namespace {

struct DpOptions {
  std::string log_path;
  std::string log_level = "INFO";
  std::string backend;  // as given, for the note
};

// dp's names and numbers (checked by the option), any case.
ConsoleLevel console_level_of(std::string level) {
  for (auto& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (level == "ERROR" || level == "0") return ConsoleLevel::error;
  if (level == "WARNING" || level == "1") return ConsoleLevel::warning;
  if (level == "DEBUG" || level == "3") return ConsoleLevel::debug;
  return ConsoleLevel::info;
}

void apply(const DpOptions& o) {
  // Under mpirun only the first rank writes the file and the notes, as dp logs on its master rank.
  if (!first_rank()) return;
  if (!o.backend.empty()) {
    std::printf("note: %s changes nothing: deepkf has one backend, LibTorch\n", o.backend.c_str());
  }
  // The loggers' terminal sinks take this level (src/train/TrainingLog.hpp, make_console_sink).
  set_console_level(console_level_of(o.log_level));
  if (!o.log_path.empty()) start_console_copy(o.log_path);
}

}  // namespace

void add_dp_options(CLI::App& app) {
  app.fallthrough();
  auto o = std::make_shared<DpOptions>();
  const std::string group = "DeePMD-kit's options (before or after the command)";
  app.add_option("-l,--log-path", o->log_path,
                 "also write everything the command prints (its log included) to this file, as dp -l")
      ->group(group);
  app.add_option("-v,--log-level", o->log_level,
                 "the terminal's log level, as dp -v (the log files keep every line)")
      ->check(CLI::IsMember({"DEBUG", "3", "INFO", "2", "WARNING", "1", "ERROR", "0"}, CLI::ignore_case))
      ->capture_default_str()
      ->group(group);
  const std::pair<const char*, const char*> flags[] = {{"--tf,--tensorflow", "--tf"},
                                                       {"--pt,--pytorch", "--pt"},
                                                       {"--pd,--paddle", "--pd"},
                                                       {"--jax", "--jax"}};
  for (const auto& [names, shown] : flags) {
    app.add_flag_callback(
           names, [o, shown = std::string(shown)] { o->backend = shown; },
           "dp's backend choice: accepted, changes nothing")
        ->group(group);
  }
  app.add_option_function<std::string>(
         "-b,--backend", [o](const std::string& name) { o->backend = "--backend " + name; },
         "dp's backend choice: accepted, changes nothing")
      ->group(group);
  app.parse_complete_callback([o] { apply(*o); });
}

}  // namespace deepkf::cli
