#include "src/learn/ExternalProgram.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/core/Error.hpp"

extern char** environ;

namespace deepkf {
namespace fs = std::filesystem;

namespace {

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// In the child between fork and exec only async-signal-safe calls: write a message and leave.
[[noreturn]] void child_fail(const char* what) {
  const char* reason = std::strerror(errno);  // not strictly async-signal-safe, but only reads a table
  (void)!::write(2, what, std::strlen(what));
  (void)!::write(2, ": ", 2);
  (void)!::write(2, reason, std::strlen(reason));
  (void)!::write(2, "\n", 1);
  ::_exit(127);
}

}  // namespace

std::string find_program(const std::string& name, const std::string& base_dir, const std::string& key,
                         const std::string& file) {
  const auto fail = [&](const std::string& why) -> std::string {
    throw ConfigError(fmt::format("'{}' in {} is \"{}\": {}", key, file, name, why));
  };
  if (name.empty()) return fail("an empty program name");
  if (name.find('/') != std::string::npos) {
    fs::path p(name);
    if (p.is_relative()) p = fs::path(base_dir) / p;
    p = p.lexically_normal();
    if (!is_executable_file(p)) return fail(p.string() + " is not an executable file");
    return p.string();
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = dirs.substr(begin, end - begin);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (is_executable_file(candidate)) return fs::absolute(candidate).lexically_normal().string();
    begin = end + 1;
  }
  return fail("not found in PATH (" + dirs + "); give its path");
}

std::string this_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the running executable (/proc/self/exe): " + ec.message());
  return p.string();
}

ProgramResult run_program(const ProgramRun& run) {
  if (run.argv.empty()) throw Error("run_program: no command");
  // Everything the child needs is prepared before fork: it may only call async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& kv : run.env) replaced |= kv.first == name;
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& kv : run.env) env_strings.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = run.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const fs::path output = fs::path(run.cwd) / run.output;
  const std::string output_path = output.string();
  const std::string cwd = run.cwd;
  const pid_t parent = ::getpid();

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error(fmt::format("cannot start {}: fork failed: {}", run.argv[0], std::strerror(errno)));
  if (pid == 0) {
    // Child: die with the parent; own process group, so that a time limit stops mpirun and its ranks.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail("prctl");
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    ::setpgid(0, 0);
    if (::chdir(cwd.c_str()) != 0) child_fail("chdir");
    const int out = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) child_fail("cannot open the output file");
    const int in = ::open("/dev/null", O_RDONLY);
    if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) child_fail("dup2");
    // Descriptors the parent holds (logs, HDF5 files) stay with the parent.
    const long max_fd = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
    for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
    ::execve(argv[0], argv.data(), envp.data());
    child_fail(argv[0]);
  }

  ProgramResult result;
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool term_sent = false;
  double term_at = 0.0;
  int wstatus = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &wstatus, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) throw Error(fmt::format("waitpid for {} failed", run.argv[0]));
    const double t = elapsed();
    if (run.timeout_s > 0.0 && !term_sent && t > run.timeout_s) {
      ::kill(-pid, SIGTERM);
      term_sent = true;
      term_at = t;
      result.timed_out = true;
    } else if (term_sent && t > term_at + 10.0) {
      ::kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(t < 1.0 ? 5 : 100));
  }
  result.wall_s = elapsed();
  if (WIFEXITED(wstatus)) result.status = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.status = 128 + WTERMSIG(wstatus);
  return result;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string file_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += l + "\n";
  return out;
}

std::string failure_text(const ProgramRun& run, const ProgramResult& result) {
  const std::string program = fs::path(run.argv.front()).filename().string();
  std::string what;
  if (result.timed_out) {
    what = fmt::format("ran past its {:g} s limit and was stopped", run.timeout_s);
  } else if (result.status > 128) {
    what = fmt::format("was killed by signal {}", result.status - 128);
  } else {
    what = fmt::format("exited with status {}", result.status);
  }
  const std::string output = (fs::path(run.cwd) / run.output).string();
  const std::string tail = file_tail(output);
  return fmt::format("{} {} in {} (command: {}); {}", program, what, run.cwd, command_line(run.argv),
                     tail.empty() ? output + " is empty" : "last lines of " + output + ":\n" + tail);
}

}  // namespace deepkf
