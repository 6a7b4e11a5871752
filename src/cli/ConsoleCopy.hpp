#pragma once
// dp's -l FILE for every command. The logs are written inside the library (train.log and learn.log beside
// the console), so the command line takes them where they leave the process: stdout and stderr pass through
// a thread that copies them into FILE. The console is then a pipe, so what checks for a terminal
// (training's progress bar) behaves as with output redirected.
#include <string>

namespace deepkf::cli {

// Starts the copy into `file` for the rest of the process; at exit everything written has been copied. The
// file is cleared when the first line is copied into it. Throws deepkf::Error when it cannot
// be written.
void start_console_copy(const std::string& file);

// A command whose own log is `log_file` calls this before it writes anything: when -l names that same file,
// the copy leaves it alone (it would have cleared a log that a restart appends to, and two writers would
// interleave), and says so.
void keep_console_copy_out_of(const std::string& log_file);

// Rank 0 of an MPI job, or a process not started by an MPI launcher; read from the launcher's environment,
// since MPI is initialised later, by the command.
bool first_rank();

}  // namespace deepkf::cli
