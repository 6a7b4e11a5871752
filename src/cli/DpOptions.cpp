#include "src/cli/DpOptions.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "src/cli/ConsoleCopy.hpp"

namespace deepkf::cli {
namespace {

struct DpOptions {
  std::string log_path;
  std::string log_level = "INFO";
  std::string backend;  // as given, for the note
};

void apply(const DpOptions& o) {
  // Under mpirun only the first rank writes the file and the notes, as dp logs on its master rank.
  if (!first_rank()) return;
  if (!o.backend.empty()) {
    std::printf("note: %s changes nothing: deepkf has one backend, LibTorch\n", o.backend.c_str());
  }
  if (o.log_level == "WARNING" || o.log_level == "1") {
    std::printf(
        "note: -v %s shows the log's other lines too: deepkf's log does not mark its warnings apart "
        "(ERROR or 0 leaves the log off the console)\n",
        o.log_level.c_str());
  }
  // deepkf logs nothing below INFO, so DEBUG shows what INFO shows.
  const bool hide_log = o.log_level == "ERROR" || o.log_level == "0";
  if (!o.log_path.empty() || hide_log) start_console_copy(o.log_path, hide_log);
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
                 "the console's log level, as dp -v: ERROR (0) leaves the log to train.log and -l's file")
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
