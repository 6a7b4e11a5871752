#include "src/cli/ConsoleCopy.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "src/core/Error.hpp"

namespace deepkf::cli {
namespace {

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a console or disk that fails loses the copy, not the run
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

class ConsoleCopy {
 public:
  explicit ConsoleCopy(const std::string& file) {
    if (!file.empty()) {
      // Not truncated yet: keep_out_of may find that this is a log a restart appends to.
      file_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (file_ < 0) throw Error("cannot write the log file " + file + " (-l): " + std::strerror(errno));
      file_name_ = std::filesystem::absolute(file);
      file_given_ = file;
    }
    // Nothing is redirected until the pipes and the thread that empties them exist.
    std::array<int, 2> write_ends{};
    for (int i = 0; i < 2; ++i) {
      int ends[2];
      streams_[i].console = ::fcntl(i + 1, F_DUPFD_CLOEXEC, 3);
      if (streams_[i].console < 0 || ::pipe2(ends, O_CLOEXEC) != 0) {
        throw Error(std::string("cannot copy the console for -l or -v: ") + std::strerror(errno));
      }
      streams_[i].pipe = ends[0];
      write_ends[i] = ends[1];
    }
    pump_ = std::thread([this] { pump(); });
    std::fflush(stdout);
    std::fflush(stderr);
    for (int i = 0; i < 2; ++i) {
      ::dup2(write_ends[i], i + 1);  // programs the command starts (learn's) write there too
      ::close(write_ends[i]);
    }
  }

  // At exit: whatever was written is in the pipes once the console is given back.
  void stop() {
    std::fflush(stdout);
    std::fflush(stderr);
    for (int i = 0; i < 2; ++i) ::dup2(streams_[i].console, i + 1);
    stopping_ = true;
    pump_.join();
    if (file_ >= 0) ::close(file_);
  }

  void keep_out_of(const std::string& log_file) {
    namespace fs = std::filesystem;
    if (file_name_.empty()) return;
    // The log may not exist yet (a first run): compare the paths, and the files where both exist.
    std::error_code log_error, copy_error, same_error;
    const fs::path log_path = fs::weakly_canonical(fs::absolute(log_file), log_error);
    const fs::path copy_path = fs::weakly_canonical(file_name_, copy_error);
    const bool same = (!log_error && !copy_error && log_path == copy_path) ||
                      fs::equivalent(log_file, file_name_, same_error);
    if (!same) return;
    {
      const std::lock_guard<std::mutex> lock(file_mutex_);
      ::close(file_);
      file_ = -1;
    }
    std::printf(
        "note: -l %s is the command's own log, written as always; the console's other lines are not "
        "added to it\n",
        file_given_.c_str());
  }

 private:
  struct Stream {
    int console = -1;  // the terminal or file the stream went to
    int pipe = -1;     // its read end
  };

  void pump() {
    std::array<pollfd, 2> fds{};
    for (int i = 0; i < 2; ++i) fds[i] = {streams_[i].pipe, POLLIN, 0};
    int open = 2;
    std::array<char, 1 << 14> chunk;
    while (open > 0) {
      // Children (learn's) may hold the write ends after exit: once stopping, a quiet pipe is the end.
      const int ready = ::poll(fds.data(), fds.size(), stopping_ ? 0 : 100);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) {
        if (stopping_) break;
        continue;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, chunk.data(), chunk.size());
        if (n > 0) {
          take(i, chunk.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          fds[i].fd = -1;
          --open;
        }
      }
    }
    for (int i = 0; i < 2; ++i) ::close(streams_[i].pipe);
  }

  void take(int i, const char* data, std::size_t size) {
    write_all(streams_[i].console, data, size);
    to_file(data, size);
  }

  void to_file(const char* data, std::size_t size) {
    const std::lock_guard<std::mutex> lock(file_mutex_);
    if (file_ < 0 || size == 0) return;
    if (!cleared_ && ::ftruncate(file_, 0) == 0) cleared_ = true;  // dp's -l file starts empty
    write_all(file_, data, size);
  }

  int file_ = -1;
  std::string file_name_;   // absolute, to compare with a command's log
  std::string file_given_;  // as on the command line, for the note
  bool cleared_ = false;
  std::mutex file_mutex_;  // keep_out_of closes the file from the command's thread
  std::array<Stream, 2> streams_;
  std::atomic<bool> stopping_{false};
  std::thread pump_;
};

ConsoleCopy* copy = nullptr;  // lives until exit; its thread is joined there

}  // namespace

void start_console_copy(const std::string& file) {
  // Line by line, as on a terminal, so that stdout and stderr keep their order in the file (glibc changes
  // the mode of a stream already written to: the notes about the options come first).
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  copy = new ConsoleCopy(file);
  std::atexit([] { copy->stop(); });
}

void keep_console_copy_out_of(const std::string& log_file) {
  if (copy != nullptr) copy->keep_out_of(log_file);
}

bool first_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"}) {
    if (const char* rank = std::getenv(name)) return std::strcmp(rank, "0") == 0;
  }
  return true;
}

}  // namespace deepkf::cli
