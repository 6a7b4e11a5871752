#pragma once
// Which log lines a command shows on the terminal, as DeePMD-kit's `dp -v/--log-level` chooses them: the log
// files (train.log, learn.log) keep every line whatever this says. Set once by the command line before the
// command runs (src/cli/DpOptions.cpp); read where the loggers are made.
namespace deepkf {

// dp's levels and their numbers: ERROR 0, WARNING 1, INFO 2, DEBUG 3. deepkf logs nothing below INFO, so
// DEBUG shows what INFO shows.
enum class ConsoleLevel { error = 0, warning = 1, info = 2, debug = 3 };

inline ConsoleLevel& console_level_setting() {
  static ConsoleLevel level = ConsoleLevel::info;
  return level;
}
inline void set_console_level(ConsoleLevel level) { console_level_setting() = level; }
inline ConsoleLevel console_level() { return console_level_setting(); }

}  // namespace deepkf
