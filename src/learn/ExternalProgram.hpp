#pragma once
// The external programs of online learning (lmp, cp2k, mpirun, deepkf itself): found from the loop's input
// or PATH, run in their own folder with their output in a file, stopped after a time limit, and described
// on failure by their command line and the tail of their output.
//
// A child is killed (SIGKILL) when the process that started it dies, even by kill -9 (Linux's parent-death
// signal), so a stopped loop leaves no DFT or MD job running behind it.
#include <string>
#include <utility>
#include <vector>

namespace deepkf {

// The absolute path of a program: `name` itself when it holds a '/' (relative to base_dir), else the first
// executable file of that name in PATH. Throws ConfigError "'<key>' in <file> is "<name>": ..." when there
// is none.
std::string find_program(const std::string& name, const std::string& base_dir, const std::string& key,
                         const std::string& file);

// The path of the running executable (/proc/self/exe).
std::string this_executable();

struct ProgramRun {
  std::vector<std::string> argv;                         // argv[0]: an absolute path (find_program)
  std::string cwd;                                       // folder to run in (must exist)
  std::vector<std::pair<std::string, std::string>> env;  // set on top of this process's environment
  std::string output;      // file that receives stdout and stderr (relative to cwd), truncated first
  double timeout_s = 0.0;  // > 0: SIGTERM to the program's process group after this long, SIGKILL 10 s later
};

struct ProgramResult {
  int status = -1;         // exit status, or 128 + signal number when killed by a signal
  bool timed_out = false;  // stopped by the time limit
  double wall_s = 0.0;
  bool ok() const { return status == 0 && !timed_out; }
};

// Runs the program and waits for it. Throws Error when it cannot be started at all (fork fails, the
// folder or output file cannot be made); a program that runs and fails is a result, not an exception.
ProgramResult run_program(const ProgramRun& run);

// argv as a shell would take it back (arguments with spaces or quotes quoted), for logs and messages.
std::string command_line(const std::vector<std::string>& argv);

// The last `lines` lines of a text file ("" when it cannot be read).
std::string file_tail(const std::string& path, int lines = 15);

// "<program> exited with status 3 | was killed by signal 9 | ran past its 600 s limit, in <cwd>
// (command: ...); last lines of <output>:\n..." for a failed run.
std::string failure_text(const ProgramRun& run, const ProgramResult& result);

}  // namespace deepkf
